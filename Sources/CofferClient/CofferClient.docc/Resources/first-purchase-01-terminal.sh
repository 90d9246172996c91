swift build
.build/debug/coffer appstore-sim init sim
.build/debug/coffer appstore-sim serve --folder sim --catalog Examples/catalog.json \
    --bundle-id com.example.app --notify http://127.0.0.1:8080/v1/apple/notifications &
.build/debug/coffer serve --bundle-id com.example.app --catalog Examples/catalog.json --apple-root sim/root.der
