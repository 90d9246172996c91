.build/debug/coffer appstore-sim history alice
.build/debug/coffer appstore-sim refund 2000000000
