/* A test engine in C for the lrbc layout (the LuckyEngine design's header).
 *
 * Offsets come from lrbc_offsets.h, which the test generates from schema/lrbc_layout.json; the
 * struct below declares the design's fields in the design's order and the static assertions
 * check that the compiler's natural alignment puts them where the table says.
 *
 * Usage: lrbc_engine NAME NUM_ENVS OBS_SIZE ACT_SIZE IDLE_SECONDS
 *
 * Creates the POSIX segment NAME (exactly), writes the header (the magic last), prints
 * "ready <pid>" and serves steps: for each action batch n (action_seq == n), env i is reset
 * when its reset flag is set (obs row 0, counter 0, flag cleared, reward 0, dones 0), else
 *   obs[i][j] += actions[i][j % act_size]; counter[i] += 1;
 *   reward[i] = sum(actions[i]); dones[i] = counter[i] % 5 == 0; truncateds[i] = counter % 7 == 0
 * then frame_seq = n. It rings no bell (a design-only engine). It notices a dead client by its
 * pid (client_pid) within 50 ms, then removes the segment and exits with 3; SIGTERM/SIGINT
 * remove it and exit with 0; IDLE_SECONDS without a batch remove it and exit with 4.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lrbc_offsets.h"

struct lrbc_header { /* the design's fields, in its order; C's natural alignment */
    uint32_t magic, version, server_pid, client_pid;
    uint8_t mode;
    uint32_t num_envs, obs_size, act_size;
    uint64_t frame_seq, action_seq;
    uint64_t obs_offset, act_offset, rewards_offset, dones_offset, resets_offset;
    uint64_t cmd_s2c_offset, cmd_c2s_offset;
    uint32_t cmd_ring_size;
    uint64_t image_offset;
    uint32_t image_width, image_height, image_channels;
    uint8_t gpu_available, gpu_obs_mode;
    uint8_t gpu_obs_handle[64];
    uint32_t gpu_device_id;
};

#define CHECK(field, name) \
    _Static_assert(offsetof(struct lrbc_header, field) == LRBC_OFF_##name, #field " offset")
CHECK(magic, MAGIC);
CHECK(version, VERSION);
CHECK(server_pid, SERVER_PID);
CHECK(client_pid, CLIENT_PID);
CHECK(mode, MODE);
CHECK(num_envs, NUM_ENVS);
CHECK(obs_size, OBS_SIZE);
CHECK(act_size, ACT_SIZE);
CHECK(frame_seq, FRAME_SEQ);
CHECK(action_seq, ACTION_SEQ);
CHECK(obs_offset, OBS_OFFSET);
CHECK(act_offset, ACT_OFFSET);
CHECK(rewards_offset, REWARDS_OFFSET);
CHECK(dones_offset, DONES_OFFSET);
CHECK(resets_offset, RESETS_OFFSET);
CHECK(cmd_s2c_offset, CMD_S2C_OFFSET);
CHECK(cmd_c2s_offset, CMD_C2S_OFFSET);
CHECK(cmd_ring_size, CMD_RING_SIZE);
CHECK(image_offset, IMAGE_OFFSET);
CHECK(image_width, IMAGE_WIDTH);
CHECK(image_height, IMAGE_HEIGHT);
CHECK(image_channels, IMAGE_CHANNELS);
CHECK(gpu_available, GPU_AVAILABLE);
CHECK(gpu_obs_mode, GPU_OBS_MODE);
CHECK(gpu_obs_handle, GPU_OBS_HANDLE);
CHECK(gpu_device_id, GPU_DEVICE_ID);
_Static_assert(sizeof(struct lrbc_header) <= LRBC_HEADER_SIZE, "header fits");

static volatile sig_atomic_t stop = 0;
static void on_signal(int sig) { (void)sig; stop = 1; }

static uint64_t align64(uint64_t v) { return (v + 63) & ~(uint64_t)63; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* 1 while process pid runs (a zombie counts as gone). */
static int alive(uint32_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%u/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *paren = strrchr(buf, ')');
    return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

#define AT(type, off) ((type *)(base + (off)))

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s NAME NUM_ENVS OBS_SIZE ACT_SIZE IDLE_SECONDS\n", argv[0]);
        return 2;
    }
    const char *name = argv[1];
    uint32_t n = (uint32_t)atoi(argv[2]), obs = (uint32_t)atoi(argv[3]);
    uint32_t act = (uint32_t)atoi(argv[4]);
    double idle = atof(argv[5]);
    uint32_t ring = LRBC_DEFAULT_RING_SIZE;

    uint64_t pos = LRBC_HEADER_SIZE, o_obs, o_act, o_rew, o_done, o_reset, o_s2c, o_c2s;
    o_obs = pos; pos = align64(pos + 4ull * n * obs);
    o_act = pos; pos = align64(pos + 4ull * n * act);
    o_rew = pos; pos = align64(pos + 4ull * n);
    o_done = pos; pos = align64(pos + 2ull * n); /* dones, then truncateds */
    o_reset = pos; pos = align64(pos + n);
    o_s2c = pos; pos = align64(pos + LRBC_RING_HEADER_SIZE + ring);
    o_c2s = pos; pos = align64(pos + LRBC_RING_HEADER_SIZE + ring);
    uint64_t total = (pos + 4095) & ~(uint64_t)4095;

    char path[256];
    snprintf(path, sizeof path, "/%s", name);
    int fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) { perror("shm_open"); return 2; }
    if (ftruncate(fd, (off_t)total) != 0) { perror("ftruncate"); shm_unlink(path); return 2; }
    uint8_t *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) { perror("mmap"); shm_unlink(path); return 2; }

    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);

    *AT(uint32_t, LRBC_OFF_VERSION) = LRBC_VERSION;
    *AT(uint32_t, LRBC_OFF_SERVER_PID) = (uint32_t)getpid();
    *AT(uint8_t, LRBC_OFF_MODE) = 0;
    *AT(uint32_t, LRBC_OFF_NUM_ENVS) = n;
    *AT(uint32_t, LRBC_OFF_OBS_SIZE) = obs;
    *AT(uint32_t, LRBC_OFF_ACT_SIZE) = act;
    *AT(uint64_t, LRBC_OFF_OBS_OFFSET) = o_obs;
    *AT(uint64_t, LRBC_OFF_ACT_OFFSET) = o_act;
    *AT(uint64_t, LRBC_OFF_REWARDS_OFFSET) = o_rew;
    *AT(uint64_t, LRBC_OFF_DONES_OFFSET) = o_done;
    *AT(uint64_t, LRBC_OFF_RESETS_OFFSET) = o_reset;
    *AT(uint64_t, LRBC_OFF_CMD_S2C_OFFSET) = o_s2c;
    *AT(uint64_t, LRBC_OFF_CMD_C2S_OFFSET) = o_c2s;
    *AT(uint32_t, LRBC_OFF_CMD_RING_SIZE) = ring;
    __atomic_store_n(AT(uint32_t, LRBC_OFF_MAGIC), (uint32_t)LRBC_MAGIC, __ATOMIC_RELEASE);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);

    float *o = AT(float, o_obs), *a = AT(float, o_act), *rew = AT(float, o_rew);
    uint8_t *done = AT(uint8_t, o_done), *trunc = done + n, *reset = AT(uint8_t, o_reset);
    uint64_t *counter = calloc(n ? n : 1, sizeof *counter);
    uint64_t frame = 0;
    int code = 0;
    double last_batch = now(), last_check = 0;
    uint64_t spins = 0;
    while (!stop) {
        uint64_t seq = __atomic_load_n(AT(uint64_t, LRBC_OFF_ACTION_SEQ), __ATOMIC_ACQUIRE);
        if (seq <= frame) {
            if (++spins < 2000) { sched_yield(); continue; }
            struct timespec nap = {0, 100000};
            nanosleep(&nap, NULL);
            double t = now();
            if (t - last_check > 0.05) {
                last_check = t;
                uint32_t client = __atomic_load_n(AT(uint32_t, LRBC_OFF_CLIENT_PID), __ATOMIC_ACQUIRE);
                if (client && !alive(client)) { code = 3; break; }
                if (t - last_batch > idle) { code = 4; break; }
            }
            continue;
        }
        spins = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (reset[i]) {
                memset(o + (size_t)i * obs, 0, sizeof(float) * obs);
                counter[i] = 0;
                rew[i] = 0.0f;
                done[i] = trunc[i] = 0;
                reset[i] = 0;
                continue;
            }
            float sum = 0.0f;
            for (uint32_t k = 0; k < act; k++) sum += a[(size_t)i * act + k];
            for (uint32_t j = 0; j < obs; j++)
                if (act) o[(size_t)i * obs + j] += a[(size_t)i * act + j % act];
            counter[i] += 1;
            rew[i] = sum;
            done[i] = counter[i] % 5 == 0;
            trunc[i] = counter[i] % 7 == 0;
        }
        frame = seq;
        __atomic_store_n(AT(uint64_t, LRBC_OFF_FRAME_SEQ), frame, __ATOMIC_RELEASE);
        last_batch = now();
    }
    shm_unlink(path);
    munmap(base, total);
    free(counter);
    return code;
}
