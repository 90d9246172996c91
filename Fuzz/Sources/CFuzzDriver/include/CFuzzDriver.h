#ifndef COFFER_FUZZ_DRIVER_H
#define COFFER_FUZZ_DRIVER_H
#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver, for executables whose `main` is their own (SwiftPM renames a Swift executable's main).
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
