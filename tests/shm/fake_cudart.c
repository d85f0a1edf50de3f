/* A stand-in for libcudart's IPC calls on host memory, with the real signatures: it checks
 * that mosaic_sdk.shm.gpu's ctypes declarations pass what CUDA expects (the 64-byte
 * cudaIpcMemHandle_t by value, the out-pointers, the copy kinds). Allocations are malloc'd;
 * a handle carries a magic and the pointer; the device is any of FAKE_DEVICES. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_DEVICES 2
typedef struct { char reserved[64]; } cudaIpcMemHandle_t;

static int current_device = 0;
int fake_last_open_flags = -1;
int fake_open_count = 0;
int fake_close_count = 0;
int fake_syncs = 0;
int fake_last_memcpy_kind = -1;

static const char *messages[] = {"no error", "invalid argument", "invalid device"};

const char *cudaGetErrorString(int code) {
    return (code >= 0 && code < 3) ? messages[code] : "unknown error";
}
int cudaGetDeviceCount(int *count) { *count = FAKE_DEVICES; return 0; }
int cudaSetDevice(int device) {
    if (device < 0 || device >= FAKE_DEVICES) return 2;
    current_device = device;
    return 0;
}
int cudaGetDevice(int *device) { *device = current_device; return 0; }
int cudaMalloc(void **ptr, size_t size) { *ptr = malloc(size); return *ptr ? 0 : 1; }
int cudaFree(void *ptr) { free(ptr); return 0; }
int cudaMemcpy(void *dst, const void *src, size_t count, int kind) {
    if (kind != 1 && kind != 2) return 1;
    fake_last_memcpy_kind = kind;
    memcpy(dst, src, count);
    return 0;
}
int cudaDeviceSynchronize(void) { fake_syncs++; return 0; }
int cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *ptr) {
    memset(handle, 0, sizeof *handle);
    memcpy(handle->reserved, "FAKECUDA", 8);
    memcpy(handle->reserved + 8, &ptr, sizeof ptr);
    handle->reserved[63] = (char)(0x40 + current_device);  /* the last byte too arrives */
    return 0;
}
int cudaIpcOpenMemHandle(void **ptr, cudaIpcMemHandle_t handle, unsigned int flags) {
    if (memcmp(handle.reserved, "FAKECUDA", 8) != 0) return 1;
    if (handle.reserved[63] != (char)(0x40 + current_device)) return 2;
    memcpy(ptr, handle.reserved + 8, sizeof *ptr);
    fake_last_open_flags = (int)flags;
    fake_open_count++;
    return 0;
}
int cudaIpcCloseMemHandle(void *ptr) { (void)ptr; fake_close_count++; return 0; }
