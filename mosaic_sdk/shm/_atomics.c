/*
 * mosaic_sdk.shm._atomics: acquire/release loads and stores, atomic
 * read-modify-write and futex wait/wake on words inside a shared buffer.
 *
 * One object wraps one writable buffer (an mmap, a SharedMemory.buf, a
 * bytearray) and keeps the buffer exported until release() is called, so the
 * per-call cost is a bounds/alignment check and one machine instruction.
 *
 * The orderings are the C11 ones, spelled with the GCC/Clang __atomic
 * builtins: on x86-64 a release store is a plain MOV and an acquire load a
 * plain MOV (the compiler is merely told not to reorder), on ARM64 they
 * become STLR / LDAR, which is exactly what the seqlocks need.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>
#define MOSAIC_HAVE_FUTEX 1
#else
#define MOSAIC_HAVE_FUTEX 0
#endif

typedef struct {
    PyObject_HEAD
    Py_buffer view;
    int has_view;
} SharedWords;

static int
check_off(SharedWords *self, Py_ssize_t off, Py_ssize_t width)
{
    if (!self->has_view) {
        PyErr_SetString(PyExc_ValueError, "SharedWords: buffer already released");
        return -1;
    }
    if (off < 0 || off + width > self->view.len) {
        PyErr_Format(PyExc_IndexError,
                     "SharedWords: offset %zd (+%zd bytes) outside a buffer of %zd bytes",
                     off, width, self->view.len);
        return -1;
    }
    if (off % width != 0) {
        PyErr_Format(PyExc_ValueError,
                     "SharedWords: offset %zd is not %zd-byte aligned", off, width);
        return -1;
    }
    return 0;
}

#define PTR(self, off, T) ((T *)((char *)(self)->view.buf + (off)))

static int
parse_off(PyObject *arg, Py_ssize_t *off)
{
    *off = PyLong_AsSsize_t(arg);
    if (*off == -1 && PyErr_Occurred())
        return -1;
    return 0;
}

static int
SharedWords_init(SharedWords *self, PyObject *args, PyObject *kwds)
{
    PyObject *obj;
    static char *kwlist[] = {"buffer", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O", kwlist, &obj))
        return -1;
    if (self->has_view) {
        PyBuffer_Release(&self->view);
        self->has_view = 0;
    }
    if (PyObject_GetBuffer(obj, &self->view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (((uintptr_t)self->view.buf) % 8 != 0) {
        PyBuffer_Release(&self->view);
        PyErr_SetString(PyExc_ValueError, "SharedWords: buffer start is not 8-byte aligned");
        return -1;
    }
    self->has_view = 1;
    return 0;
}

static void
SharedWords_dealloc(SharedWords *self)
{
    if (self->has_view) {
        PyBuffer_Release(&self->view);
        self->has_view = 0;
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
SharedWords_release(SharedWords *self, PyObject *Py_UNUSED(ignored))
{
    if (self->has_view) {
        PyBuffer_Release(&self->view);
        self->has_view = 0;
    }
    Py_RETURN_NONE;
}

static PyObject *
SharedWords_load_u64(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t off;
    if (nargs != 1) { PyErr_SetString(PyExc_TypeError, "load_u64(offset)"); return NULL; }
    if (parse_off(args[0], &off) < 0 || check_off(self, off, 8) < 0) return NULL;
    return PyLong_FromUnsignedLongLong(__atomic_load_n(PTR(self, off, uint64_t), __ATOMIC_ACQUIRE));
}

static PyObject *
SharedWords_load_u32(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t off;
    if (nargs != 1) { PyErr_SetString(PyExc_TypeError, "load_u32(offset)"); return NULL; }
    if (parse_off(args[0], &off) < 0 || check_off(self, off, 4) < 0) return NULL;
    return PyLong_FromUnsignedLong(__atomic_load_n(PTR(self, off, uint32_t), __ATOMIC_ACQUIRE));
}

static PyObject *
SharedWords_store_u64(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t off;
    unsigned long long v;
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "store_u64(offset, value)"); return NULL; }
    if (parse_off(args[0], &off) < 0 || check_off(self, off, 8) < 0) return NULL;
    v = PyLong_AsUnsignedLongLong(args[1]);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    __atomic_store_n(PTR(self, off, uint64_t), (uint64_t)v, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

static PyObject *
SharedWords_store_u32(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t off;
    unsigned long v;
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "store_u32(offset, value)"); return NULL; }
    if (parse_off(args[0], &off) < 0 || check_off(self, off, 4) < 0) return NULL;
    v = PyLong_AsUnsignedLong(args[1]);
    if (v == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    if (v > 0xFFFFFFFFUL) { PyErr_SetString(PyExc_OverflowError, "value does not fit in u32"); return NULL; }
    __atomic_store_n(PTR(self, off, uint32_t), (uint32_t)v, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

static PyObject *
SharedWords_store_f64(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    /* A double stored as one aligned 64-bit release store (bit pattern). */
    Py_ssize_t off;
    double d;
    uint64_t bits;
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "store_f64(offset, value)"); return NULL; }
    if (parse_off(args[0], &off) < 0 || check_off(self, off, 8) < 0) return NULL;
    d = PyFloat_AsDouble(args[1]);
    if (d == -1.0 && PyErr_Occurred()) return NULL;
    memcpy(&bits, &d, 8);
    __atomic_store_n(PTR(self, off, uint64_t), bits, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

static PyObject *
SharedWords_load_f64(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t off;
    double d;
    uint64_t bits;
    if (nargs != 1) { PyErr_SetString(PyExc_TypeError, "load_f64(offset)"); return NULL; }
    if (parse_off(args[0], &off) < 0 || check_off(self, off, 8) < 0) return NULL;
    bits = __atomic_load_n(PTR(self, off, uint64_t), __ATOMIC_ACQUIRE);
    memcpy(&d, &bits, 8);
    return PyFloat_FromDouble(d);
}

static PyObject *
SharedWords_fetch_add_u64(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t off;
    unsigned long long v;
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "fetch_add_u64(offset, delta)"); return NULL; }
    if (parse_off(args[0], &off) < 0 || check_off(self, off, 8) < 0) return NULL;
    v = PyLong_AsUnsignedLongLong(args[1]);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    return PyLong_FromUnsignedLongLong(
        __atomic_fetch_add(PTR(self, off, uint64_t), (uint64_t)v, __ATOMIC_ACQ_REL));
}

static PyObject *
SharedWords_fetch_or_u32(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t off;
    unsigned long v;
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "fetch_or_u32(offset, bits)"); return NULL; }
    if (parse_off(args[0], &off) < 0 || check_off(self, off, 4) < 0) return NULL;
    v = PyLong_AsUnsignedLong(args[1]);
    if (v == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    return PyLong_FromUnsignedLong(
        __atomic_fetch_or(PTR(self, off, uint32_t), (uint32_t)v, __ATOMIC_ACQ_REL));
}

static PyObject *
SharedWords_fetch_and_u32(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t off;
    unsigned long v;
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "fetch_and_u32(offset, mask)"); return NULL; }
    if (parse_off(args[0], &off) < 0 || check_off(self, off, 4) < 0) return NULL;
    v = PyLong_AsUnsignedLong(args[1]);
    if (v == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    return PyLong_FromUnsignedLong(
        __atomic_fetch_and(PTR(self, off, uint32_t), (uint32_t)v, __ATOMIC_ACQ_REL));
}

static PyObject *
SharedWords_cas_u64(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t off;
    unsigned long long expected, desired;
    uint64_t exp;
    if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "cas_u64(offset, expected, desired)"); return NULL; }
    if (parse_off(args[0], &off) < 0 || check_off(self, off, 8) < 0) return NULL;
    expected = PyLong_AsUnsignedLongLong(args[1]);
    if (expected == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    desired = PyLong_AsUnsignedLongLong(args[2]);
    if (desired == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    exp = (uint64_t)expected;
    if (__atomic_compare_exchange_n(PTR(self, off, uint64_t), &exp, (uint64_t)desired, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

static PyObject *
SharedWords_cas_u32(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t off;
    unsigned long expected, desired;
    uint32_t exp;
    if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "cas_u32(offset, expected, desired)"); return NULL; }
    if (parse_off(args[0], &off) < 0 || check_off(self, off, 4) < 0) return NULL;
    expected = PyLong_AsUnsignedLong(args[1]);
    if (expected == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    desired = PyLong_AsUnsignedLong(args[2]);
    if (desired == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    exp = (uint32_t)expected;
    if (__atomic_compare_exchange_n(PTR(self, off, uint32_t), &exp, (uint32_t)desired, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

static PyObject *
SharedWords_futex_wait(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    /* futex_wait(offset, expected_u32, timeout_seconds) -> bool
     * Sleeps while the u32 at offset equals expected, for at most timeout
     * seconds (a negative timeout waits forever). Returns True when woken or
     * when the value already differed, False on timeout. The GIL is released
     * while sleeping; a signal makes it return True (callers re-check). */
    Py_ssize_t off;
    unsigned long expected;
    double timeout;
    if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "futex_wait(offset, expected, timeout)"); return NULL; }
    if (parse_off(args[0], &off) < 0 || check_off(self, off, 4) < 0) return NULL;
    expected = PyLong_AsUnsignedLong(args[1]);
    if (expected == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    timeout = PyFloat_AsDouble(args[2]);
    if (timeout == -1.0 && PyErr_Occurred()) return NULL;
#if MOSAIC_HAVE_FUTEX
    {
        struct timespec ts, *tsp = NULL;
        long rc;
        int err;
        uint32_t *addr = PTR(self, off, uint32_t);
        if (timeout >= 0) {
            ts.tv_sec = (time_t)timeout;
            ts.tv_nsec = (long)((timeout - (double)ts.tv_sec) * 1e9);
            tsp = &ts;
        }
        Py_BEGIN_ALLOW_THREADS
        /* Not FUTEX_PRIVATE: the word is shared between processes. */
        rc = syscall(SYS_futex, addr, FUTEX_WAIT, (uint32_t)expected, tsp, NULL, 0);
        err = errno;
        Py_END_ALLOW_THREADS
        if (rc == 0 || err == EAGAIN || err == EINTR)
            Py_RETURN_TRUE;
        if (err == ETIMEDOUT)
            Py_RETURN_FALSE;
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
#else
    PyErr_SetString(PyExc_NotImplementedError, "futex is only available on Linux");
    return NULL;
#endif
}

static PyObject *
SharedWords_futex_wake(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    /* futex_wake(offset, count) -> number of waiters woken */
    Py_ssize_t off;
    long count;
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "futex_wake(offset, count)"); return NULL; }
    if (parse_off(args[0], &off) < 0 || check_off(self, off, 4) < 0) return NULL;
    count = PyLong_AsLong(args[1]);
    if (count == -1 && PyErr_Occurred()) return NULL;
#if MOSAIC_HAVE_FUTEX
    {
        long rc = syscall(SYS_futex, PTR(self, off, uint32_t), FUTEX_WAKE, (int)count, NULL, NULL, 0);
        if (rc < 0)
            return PyErr_SetFromErrno(PyExc_OSError);
        return PyLong_FromLong(rc);
    }
#else
    PyErr_SetString(PyExc_NotImplementedError, "futex is only available on Linux");
    return NULL;
#endif
}

static PyObject *
SharedWords_fence(SharedWords *self, PyObject *Py_UNUSED(ignored))
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    Py_RETURN_NONE;
}

static PyObject *
SharedWords_enter(SharedWords *self, PyObject *Py_UNUSED(ignored))
{
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *
SharedWords_exit(SharedWords *self, PyObject *args)
{
    return SharedWords_release(self, NULL);
}

static PyObject *
SharedWords_get_size(SharedWords *self, void *closure)
{
    return PyLong_FromSsize_t(self->has_view ? self->view.len : 0);
}

static PyObject *
SharedWords_get_address(SharedWords *self, void *closure)
{
    return PyLong_FromVoidPtr(self->has_view ? self->view.buf : NULL);
}

/* FastLane one-call slot write/read: defined in the section at the end of this file. */
static PyObject *SharedWords_fastlane_write(SharedWords *, PyObject *const *, Py_ssize_t);
static PyObject *SharedWords_fastlane_read(SharedWords *, PyObject *const *, Py_ssize_t);
static PyObject *SharedWords_fastlane_cursor(SharedWords *, PyObject *const *, Py_ssize_t);

static PyMethodDef SharedWords_methods[] = {
    {"load_u64", (PyCFunction)(void (*)(void))SharedWords_load_u64, METH_FASTCALL, "Acquire load of the u64 at offset."},
    {"load_u32", (PyCFunction)(void (*)(void))SharedWords_load_u32, METH_FASTCALL, "Acquire load of the u32 at offset."},
    {"load_f64", (PyCFunction)(void (*)(void))SharedWords_load_f64, METH_FASTCALL, "Acquire load of the f64 at offset."},
    {"store_u64", (PyCFunction)(void (*)(void))SharedWords_store_u64, METH_FASTCALL, "Release store of a u64 at offset."},
    {"store_u32", (PyCFunction)(void (*)(void))SharedWords_store_u32, METH_FASTCALL, "Release store of a u32 at offset."},
    {"store_f64", (PyCFunction)(void (*)(void))SharedWords_store_f64, METH_FASTCALL, "Release store of an f64 at offset (one 64-bit store)."},
    {"fetch_add_u64", (PyCFunction)(void (*)(void))SharedWords_fetch_add_u64, METH_FASTCALL, "Atomic add; returns the old value."},
    {"fetch_or_u32", (PyCFunction)(void (*)(void))SharedWords_fetch_or_u32, METH_FASTCALL, "Atomic OR; returns the old value."},
    {"fetch_and_u32", (PyCFunction)(void (*)(void))SharedWords_fetch_and_u32, METH_FASTCALL, "Atomic AND; returns the old value."},
    {"cas_u64", (PyCFunction)(void (*)(void))SharedWords_cas_u64, METH_FASTCALL, "Compare-and-swap; True on success."},
    {"cas_u32", (PyCFunction)(void (*)(void))SharedWords_cas_u32, METH_FASTCALL, "Compare-and-swap; True on success."},
    {"futex_wait", (PyCFunction)(void (*)(void))SharedWords_futex_wait, METH_FASTCALL, "Sleep while the u32 at offset equals expected."},
    {"futex_wake", (PyCFunction)(void (*)(void))SharedWords_futex_wake, METH_FASTCALL, "Wake up to count waiters on the u32 at offset."},
    {"fence", (PyCFunction)SharedWords_fence, METH_NOARGS, "Full memory fence."},
    {"fastlane_write", (PyCFunction)(void (*)(void))SharedWords_fastlane_write, METH_FASTCALL, "Seqlocked write of one FastLane slot, then release-store head (see the end of _atomics.c)."},
    {"fastlane_read", (PyCFunction)(void (*)(void))SharedWords_fastlane_read, METH_FASTCALL, "Seqlocked copy of one FastLane slot; None when torn or not the expected frame."},
    {"fastlane_cursor", (PyCFunction)(void (*)(void))SharedWords_fastlane_cursor, METH_FASTCALL, "A FastLaneCursor: the reader's whole newest-frame read in one call (see the end of _atomics.c)."},
    {"release", (PyCFunction)SharedWords_release, METH_NOARGS, "Stop exporting the buffer (required before closing an mmap)."},
    {"__enter__", (PyCFunction)SharedWords_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)SharedWords_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}
};

static PyGetSetDef SharedWords_getset[] = {
    {"size", (getter)SharedWords_get_size, NULL, "Size of the wrapped buffer in bytes (0 once released).", NULL},
    {"address", (getter)SharedWords_get_address, NULL, "Address of the buffer's first byte (0 once released).", NULL},
    {NULL}
};

static PyTypeObject FastLaneCursorType; /* defined in the FastLane section at the end */

static PyTypeObject SharedWordsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mosaic_sdk.shm._atomics.SharedWords",
    .tp_doc = "Atomic access to aligned words of a writable shared buffer.",
    .tp_basicsize = sizeof(SharedWords),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)SharedWords_init,
    .tp_dealloc = (destructor)SharedWords_dealloc,
    .tp_methods = SharedWords_methods,
    .tp_getset = SharedWords_getset,
};

static struct PyModuleDef atomics_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "mosaic_sdk.shm._atomics",
    .m_doc = "Native acquire/release atomics and futex wait/wake for shared memory.",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__atomics(void)
{
    PyObject *m;
    if (PyType_Ready(&SharedWordsType) < 0)
        return NULL;
    m = PyModule_Create(&atomics_module);
    if (m == NULL)
        return NULL;
    if (PyType_Ready(&FastLaneCursorType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&SharedWordsType);
    if (PyModule_AddObject(m, "SharedWords", (PyObject *)&SharedWordsType) < 0) {
        Py_DECREF(&SharedWordsType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "HAVE_FUTEX", MOSAIC_HAVE_FUTEX) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}


/* ========================================================================
 * FastLane: one-call seqlocked slot write and read (mosaic_sdk.fastlane).
 *
 * Slot layout (see schema/fastlane.md): at slot_off a u64 seq, u32
 * frame_len, u32 metadata_len, then frame bytes and metadata bytes; the
 * per-slot metrics block (f64 last_reward, f64 rolling_return, f64
 * step_rate_hz, u64 published_ns) at metrics_off, inside the seqlock.
 * Frame number `head` (1-based) has seq 2*head+1 while written and
 * 2*head+2 once complete.
 *
 * Ordering (C11, correct on x86-64 and ARM64):
 *   writer: seq=odd (relaxed); fence(release); data; seq=even (release);
 *           HUD header copy (relaxed); head (release)
 *   reader: seq (acquire); data; fence(acquire); seq again (relaxed)
 * The data themselves are copied with memcpy: a reader that races with the
 * writer may copy a mix of bytes, which the second seq load detects.
 * ======================================================================== */
#include <time.h>

static void
fl_store_f64(SharedWords *self, Py_ssize_t off, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, 8);
    __atomic_store_n(PTR(self, off, uint64_t), bits, __ATOMIC_RELAXED);
}

static PyObject *
fl_load_f64(SharedWords *self, Py_ssize_t off)
{
    uint64_t bits = __atomic_load_n(PTR(self, off, uint64_t), __ATOMIC_RELAXED);
    double d;
    memcpy(&d, &bits, 8);
    return PyFloat_FromDouble(d);
}

static uint64_t
fl_now_ns(void)
{
#if defined(CLOCK_MONOTONIC)
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
        return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
#endif
    return 0;
}

/* Copies above this size release the GIL while they run. */
#define FL_NOGIL_BYTES (256 * 1024)
/* Frames above this size are written with non-temporal (streaming) stores on x86-64: the
 * ring's slots rotate through more memory than the cache holds, and streaming stores skip
 * reading each destination line before overwriting it. */
#define FL_STREAM_BYTES (1024 * 1024)

/* The copies of a slot's bytes both readers make (fastlane_read and the cursor), between
 * the two loads of the slot's seq: into the caller's buffer, into a new bytes object, and the
 * metadata (None when there is none). Copies above FL_NOGIL_BYTES release the GIL. */
static void
fl_read_into(void *dst, const char *src, uint32_t n)
{
    if (n > FL_NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        memcpy(dst, src, n);
        Py_END_ALLOW_THREADS
    } else {
        memcpy(dst, src, n);
    }
}

static PyObject *
fl_read_bytes(const char *src, uint32_t n)
{
    PyObject *out;
    if (n <= FL_NOGIL_BYTES)
        return PyBytes_FromStringAndSize(src, n);
    out = PyBytes_FromStringAndSize(NULL, n);
    if (out != NULL)
        fl_read_into(PyBytes_AS_STRING(out), src, n);
    return out;
}

static PyObject *
fl_read_meta(const char *src, uint32_t n)
{
    if (n > 0)
        return PyBytes_FromStringAndSize(src, n);
    Py_RETURN_NONE;
}

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define FL_HAVE_STREAM 1
static void
fl_copy_frame(char *dst, const char *src, size_t n)
{
    size_t lead, blocks, i;
    if (n < FL_STREAM_BYTES) {
        memcpy(dst, src, n);
        return;
    }
    lead = (16 - ((uintptr_t)dst & 15)) & 15;
    memcpy(dst, src, lead);
    dst += lead; src += lead; n -= lead;
    blocks = n / 64;
    for (i = 0; i < blocks; i++) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src));
        __m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(src + 48));
        _mm_stream_si128((__m128i *)(dst), a);
        _mm_stream_si128((__m128i *)(dst + 16), b);
        _mm_stream_si128((__m128i *)(dst + 32), c);
        _mm_stream_si128((__m128i *)(dst + 48), d);
        src += 64; dst += 64;
    }
    memcpy(dst, src, n - blocks * 64);
    /* streaming stores are weakly ordered even on x86: fence before the seq release store */
    _mm_sfence();
}
#else
#define FL_HAVE_STREAM 0
static void
fl_copy_frame(char *dst, const char *src, size_t n)
{
    memcpy(dst, src, n);
}
#endif

static PyObject *
SharedWords_fastlane_write(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    /* fastlane_write(slot_off, head, frame, metadata, payload_cap, metrics_off,
     *                last_reward, rolling_return, step_rate_hz, hud_off, head_off)
     * metadata may be None; hud_off < 0 skips the header HUD copy. */
    Py_ssize_t slot_off, payload_cap, metrics_off, hud_off, head_off;
    unsigned long long head;
    Py_buffer fv, mv;
    int have_meta = 0;
    uint64_t *seq;
    double m[3];
    char *base;
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError,
                        "fastlane_write(slot_off, head, frame, metadata, payload_cap, metrics_off, "
                        "last_reward, rolling_return, step_rate_hz, hud_off, head_off)");
        return NULL;
    }
    if (parse_off(args[0], &slot_off) < 0 || parse_off(args[4], &payload_cap) < 0 ||
        parse_off(args[5], &metrics_off) < 0 || parse_off(args[9], &hud_off) < 0 ||
        parse_off(args[10], &head_off) < 0)
        return NULL;
    head = PyLong_AsUnsignedLongLong(args[1]);
    if (head == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    if (payload_cap < 0) { PyErr_SetString(PyExc_ValueError, "payload_cap < 0"); return NULL; }
    for (int i = 0; i < 3; i++) {
        m[i] = PyFloat_AsDouble(args[6 + i]);
        if (m[i] == -1.0 && PyErr_Occurred()) return NULL;
    }
    if (check_off(self, slot_off, 8) < 0 || check_off(self, slot_off + 8, 4) < 0 ||
        check_off(self, metrics_off, 8) < 0 || check_off(self, metrics_off + 24, 8) < 0 ||
        check_off(self, head_off, 8) < 0)
        return NULL;
    if (slot_off + 16 + payload_cap > self->view.len) {
        PyErr_SetString(PyExc_IndexError, "fastlane_write: slot payload outside the buffer");
        return NULL;
    }
    if (hud_off >= 0 && (check_off(self, hud_off, 8) < 0 || check_off(self, hud_off + 16, 8) < 0))
        return NULL;
    if (PyObject_GetBuffer(args[2], &fv, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (args[3] != Py_None) {
        if (PyObject_GetBuffer(args[3], &mv, PyBUF_C_CONTIGUOUS) < 0) {
            PyBuffer_Release(&fv);
            return NULL;
        }
        have_meta = 1;
    }
    if (fv.len + (have_meta ? mv.len : 0) > payload_cap) {
        PyErr_Format(PyExc_ValueError,
                     "fastlane_write: frame (%zd bytes) + metadata (%zd bytes) exceed the slot "
                     "payload of %zd bytes", fv.len, have_meta ? mv.len : (Py_ssize_t)0, payload_cap);
        PyBuffer_Release(&fv);
        if (have_meta) PyBuffer_Release(&mv);
        return NULL;
    }
    base = (char *)self->view.buf;
    seq = PTR(self, slot_off, uint64_t);
    __atomic_store_n(seq, (uint64_t)(2 * head + 1), __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(PTR(self, slot_off + 8, uint32_t), (uint32_t)fv.len, __ATOMIC_RELAXED);
    __atomic_store_n(PTR(self, slot_off + 12, uint32_t),
                     (uint32_t)(have_meta ? mv.len : 0), __ATOMIC_RELAXED);
    if (fv.len > FL_NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        fl_copy_frame(base + slot_off + 16, fv.buf, (size_t)fv.len);
        Py_END_ALLOW_THREADS
    } else {
        memcpy(base + slot_off + 16, fv.buf, (size_t)fv.len);
    }
    if (have_meta && mv.len > 0)
        memcpy(base + slot_off + 16 + fv.len, mv.buf, (size_t)mv.len);
    PyBuffer_Release(&fv);
    if (have_meta) PyBuffer_Release(&mv);
    fl_store_f64(self, metrics_off, m[0]);
    fl_store_f64(self, metrics_off + 8, m[1]);
    fl_store_f64(self, metrics_off + 16, m[2]);
    __atomic_store_n(PTR(self, metrics_off + 24, uint64_t), fl_now_ns(), __ATOMIC_RELAXED);
    __atomic_store_n(seq, (uint64_t)(2 * head + 2), __ATOMIC_RELEASE);
    if (hud_off >= 0) {
        fl_store_f64(self, hud_off, m[0]);
        fl_store_f64(self, hud_off + 8, m[1]);
        fl_store_f64(self, hud_off + 16, m[2]);
    }
    __atomic_store_n(PTR(self, head_off, uint64_t), (uint64_t)head, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

static PyObject *
SharedWords_fastlane_read(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    /* fastlane_read(slot_off, head, metrics_off, payload_cap[, dest])
     *   -> (frame, metadata, last_reward, rolling_return, step_rate_hz, published_ns) | None
     * frame is a new bytes object, or, when a writable dest buffer is given, the number of
     * frame bytes copied into it. metadata is bytes or None. None means the slot does not
     * hold frame `head` complete (in flight, overwritten, or torn during the copy). */
    Py_ssize_t slot_off, metrics_off, payload_cap;
    unsigned long long head;
    uint64_t want, s1, s2, ns;
    uint32_t flen, mlen;
    const char *src;
    PyObject *frame = NULL, *meta = NULL, *r = NULL, *g = NULL, *hz = NULL, *out;
    Py_buffer dv;
    int have_dest = 0;
    if (nargs != 4 && nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "fastlane_read(slot_off, head, metrics_off, payload_cap[, dest])");
        return NULL;
    }
    if (parse_off(args[0], &slot_off) < 0 || parse_off(args[2], &metrics_off) < 0 ||
        parse_off(args[3], &payload_cap) < 0)
        return NULL;
    head = PyLong_AsUnsignedLongLong(args[1]);
    if (head == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    if (check_off(self, slot_off, 8) < 0 || check_off(self, slot_off + 8, 4) < 0 ||
        check_off(self, metrics_off, 8) < 0 || check_off(self, metrics_off + 24, 8) < 0)
        return NULL;
    if (payload_cap < 0 || slot_off + 16 + payload_cap > self->view.len) {
        PyErr_SetString(PyExc_IndexError, "fastlane_read: slot payload outside the buffer");
        return NULL;
    }
    if (nargs == 5 && args[4] != Py_None) {
        if (PyObject_GetBuffer(args[4], &dv, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
            return NULL;
        have_dest = 1;
    }
    want = (uint64_t)(2 * head + 2);
    s1 = __atomic_load_n(PTR(self, slot_off, uint64_t), __ATOMIC_ACQUIRE);
    if (s1 != want)
        goto not_ready;
    flen = __atomic_load_n(PTR(self, slot_off + 8, uint32_t), __ATOMIC_RELAXED);
    mlen = __atomic_load_n(PTR(self, slot_off + 12, uint32_t), __ATOMIC_RELAXED);
    if ((Py_ssize_t)flen + (Py_ssize_t)mlen > payload_cap)
        goto not_ready; /* lengths from a torn read */
    src = (const char *)self->view.buf + slot_off + 16;
    if (have_dest) {
        if (dv.len < (Py_ssize_t)flen) {
            PyBuffer_Release(&dv);
            PyErr_Format(PyExc_ValueError,
                         "fastlane_read: destination holds %zd bytes, the frame has %u",
                         dv.len, (unsigned)flen);
            return NULL;
        }
        fl_read_into(dv.buf, src, flen);
        PyBuffer_Release(&dv);
        have_dest = 0;
        frame = PyLong_FromUnsignedLong(flen);
    } else {
        frame = fl_read_bytes(src, flen);
    }
    if (frame == NULL)
        return NULL;
    meta = fl_read_meta(src + flen, mlen);
    if (meta == NULL) { Py_DECREF(frame); return NULL; }
    r = fl_load_f64(self, metrics_off);
    g = fl_load_f64(self, metrics_off + 8);
    hz = fl_load_f64(self, metrics_off + 16);
    ns = __atomic_load_n(PTR(self, metrics_off + 24, uint64_t), __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    s2 = __atomic_load_n(PTR(self, slot_off, uint64_t), __ATOMIC_RELAXED);
    if (s2 != s1 || r == NULL || g == NULL || hz == NULL) {
        int failed = (r == NULL || g == NULL || hz == NULL);
        Py_DECREF(frame); Py_DECREF(meta);
        Py_XDECREF(r); Py_XDECREF(g); Py_XDECREF(hz);
        if (failed) return NULL;
        Py_RETURN_NONE;
    }
    out = PyTuple_New(6);
    if (out == NULL) {
        Py_DECREF(frame); Py_DECREF(meta); Py_DECREF(r); Py_DECREF(g); Py_DECREF(hz);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, frame);
    PyTuple_SET_ITEM(out, 1, meta);
    PyTuple_SET_ITEM(out, 2, r);
    PyTuple_SET_ITEM(out, 3, g);
    PyTuple_SET_ITEM(out, 4, hz);
    PyTuple_SET_ITEM(out, 5, PyLong_FromUnsignedLongLong(ns));
    if (PyTuple_GET_ITEM(out, 5) == NULL) { Py_DECREF(out); return NULL; }
    return out;

not_ready:
    if (have_dest) PyBuffer_Release(&dv);
    Py_RETURN_NONE;
}


/* ========================================================================
 * FastLaneCursor: a reader's whole "newest frame" read in one C call.
 *
 * words.fastlane_cursor(capacity, slot_size, frame_bytes, payload_cap, metrics_off,
 *                       width, height, channels, generation,
 *                       frame_type, metrics_type, slow)
 * binds a ring's geometry (checked against the buffer once, here) to the
 * reader's record types. cursor.latest_frame() and cursor.read_into(dest)
 * then do, in one call: the flags check, the head load, the slot arithmetic,
 * the seqlocked copy of frame, metadata and metrics (the protocol of
 * fastlane_read above, unchanged), and build the finished frame_type and
 * metrics_type objects by filling their __slots__ directly.
 *
 * Only the plain case is handled here: a readable slot holding the newest
 * frame, complete, with the ring's frame size. Everything else (nothing
 * published, FLAG_INVALIDATED, a slot in flight or torn, lengths that do not
 * fit, a destination that does not fit, a released buffer) is handed to
 * slow(dest, tried), the reader's Python path, whose answer is returned;
 * tried is 1 when a slot was tried and found not ready (one retry spent).
 *
 * metrics_off >= 0: the metrics block sits at slot_off + metrics_off (inside
 * the seqlock); < 0: a version-1 ring, the header's HUD copy at offset 56.
 * ======================================================================== */
#include <structmember.h>

#define FL_HDR_SIZE 80
#define FL_OFF_FLAGS 8
#define FL_OFF_HEAD 40
#define FL_OFF_HUD 56
#define FL_FLAG_INVALIDATED 1u

static const char *const fl_frame_fields[] = {
    "data", "width", "height", "channels", "metrics", "metadata", "seq", "generation"};
static const char *const fl_metrics_fields[] = {"last_reward", "rolling_return", "step_rate_hz"};
#define FL_NFRAME 8
#define FL_NMETRICS 3

typedef struct {
    PyObject_HEAD
    SharedWords *words;
    PyTypeObject *frame_type;
    PyTypeObject *metrics_type;
    PyObject *width, *height, *channels, *generation;
    PyObject *slow;
    Py_ssize_t frame_slot[FL_NFRAME];
    Py_ssize_t metrics_slot[FL_NMETRICS];
    uint64_t capacity;
    Py_ssize_t slot_size, frame_bytes, payload_cap, metrics_off;
} FastLaneCursor;

static int
fl_slot_offsets(PyTypeObject *type, const char *const *names, int n, Py_ssize_t *offs)
{
    /* The byte offset of each named __slots__ member of type (a class with __slots__, such
     * as a dataclass(slots=True)); an error when one is not a plain object slot. */
    if (!PyType_Check(type) || type->tp_itemsize != 0 || type->tp_alloc == NULL) {
        PyErr_SetString(PyExc_TypeError, "fastlane_cursor: record types must be classes");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *d = PyObject_GetAttrString((PyObject *)type, names[i]);
        if (d == NULL)
            return -1;
        if (!Py_IS_TYPE(d, &PyMemberDescr_Type) ||
            ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX ||
            ((PyMemberDescrObject *)d)->d_member->offset < (Py_ssize_t)sizeof(PyObject) ||
            ((PyMemberDescrObject *)d)->d_member->offset + (Py_ssize_t)sizeof(PyObject *) >
                type->tp_basicsize) {
            Py_DECREF(d);
            PyErr_Format(PyExc_TypeError,
                         "fastlane_cursor: %s.%s is not a __slots__ member",
                         type->tp_name, names[i]);
            return -1;
        }
        offs[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
    }
    return 0;
}

static PyObject *
fl_new_record(PyTypeObject *type, const Py_ssize_t *offs, PyObject **values, int n)
{
    /* A new instance of type with its slots set to values (references stolen, also on
     * failure). */
    PyObject *obj = type->tp_alloc(type, 0);
    if (obj == NULL) {
        for (int i = 0; i < n; i++)
            Py_DECREF(values[i]);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        *(PyObject **)((char *)obj + offs[i]) = values[i];
    return obj;
}

static PyObject *
SharedWords_fastlane_cursor(SharedWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t capacity, slot_size, frame_bytes, payload_cap, metrics_off;
    FastLaneCursor *c;
    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError,
                        "fastlane_cursor(capacity, slot_size, frame_bytes, payload_cap, "
                        "metrics_off, width, height, channels, generation, frame_type, "
                        "metrics_type, slow)");
        return NULL;
    }
    if (parse_off(args[0], &capacity) < 0 || parse_off(args[1], &slot_size) < 0 ||
        parse_off(args[2], &frame_bytes) < 0 || parse_off(args[3], &payload_cap) < 0 ||
        parse_off(args[4], &metrics_off) < 0)
        return NULL;
    if (!self->has_view) {
        PyErr_SetString(PyExc_ValueError, "SharedWords: buffer already released");
        return NULL;
    }
    if (capacity < 1 || slot_size < 16 || slot_size % 8 != 0 || frame_bytes < 0 ||
        payload_cap < frame_bytes || 16 + payload_cap > self->view.len ||
        capacity > (self->view.len - FL_HDR_SIZE) / slot_size ||
        FL_HDR_SIZE + (capacity - 1) * slot_size + 16 + payload_cap > self->view.len ||
        (metrics_off >= 0 && (metrics_off % 8 != 0 || metrics_off + 32 > slot_size))) {
        PyErr_SetString(PyExc_IndexError,
                        "fastlane_cursor: the ring's geometry does not fit the buffer");
        return NULL;
    }
    if (!PyCallable_Check(args[11])) {
        PyErr_SetString(PyExc_TypeError, "fastlane_cursor: slow must be callable");
        return NULL;
    }
    c = PyObject_GC_New(FastLaneCursor, &FastLaneCursorType);
    if (c == NULL)
        return NULL;
    c->words = self; Py_INCREF(self);
    c->width = args[5]; Py_INCREF(args[5]);
    c->height = args[6]; Py_INCREF(args[6]);
    c->channels = args[7]; Py_INCREF(args[7]);
    c->generation = args[8]; Py_INCREF(args[8]);
    c->frame_type = (PyTypeObject *)args[9]; Py_INCREF(args[9]);
    c->metrics_type = (PyTypeObject *)args[10]; Py_INCREF(args[10]);
    c->slow = args[11]; Py_INCREF(args[11]);
    c->capacity = (uint64_t)capacity;
    c->slot_size = slot_size;
    c->frame_bytes = frame_bytes;
    c->payload_cap = payload_cap;
    c->metrics_off = metrics_off;
    PyObject_GC_Track(c);
    if (fl_slot_offsets(c->frame_type, fl_frame_fields, FL_NFRAME, c->frame_slot) < 0 ||
        fl_slot_offsets(c->metrics_type, fl_metrics_fields, FL_NMETRICS, c->metrics_slot) < 0) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

static PyObject *
fl_cursor_slow(FastLaneCursor *c, PyObject *dest, int tried)
{
    PyObject *args[2];
    PyObject *flag = PyLong_FromLong(tried);
    PyObject *out;
    if (flag == NULL)
        return NULL;
    args[0] = dest == NULL ? Py_None : dest;
    args[1] = flag;
    out = PyObject_Vectorcall(c->slow, args, 2, NULL);
    Py_DECREF(flag);
    return out;
}

static PyObject *
fl_cursor_read(FastLaneCursor *c, PyObject *dest)
{
    SharedWords *w = c->words;
    const char *base, *src;
    uint64_t head, want, s1, s2, bits[3];
    uint32_t flen, mlen;
    Py_ssize_t slot_off, moff;
    PyObject *data, *meta, *vals[FL_NFRAME], *mvals[FL_NMETRICS], *metrics, *out;
    Py_buffer dv;
    double d;

    if (w == NULL || c->slow == NULL) {
        PyErr_SetString(PyExc_ValueError, "FastLaneCursor: cleared");
        return NULL;
    }
    if (!w->has_view)
        return fl_cursor_slow(c, dest, 0);
    base = (const char *)w->view.buf;
    if (__atomic_load_n((const uint32_t *)(base + FL_OFF_FLAGS), __ATOMIC_ACQUIRE) &
        FL_FLAG_INVALIDATED)
        return fl_cursor_slow(c, dest, 0);
    head = __atomic_load_n((const uint64_t *)(base + FL_OFF_HEAD), __ATOMIC_ACQUIRE);
    if (head == 0)
        return fl_cursor_slow(c, dest, 0);
    slot_off = FL_HDR_SIZE + (Py_ssize_t)((head - 1) % c->capacity) * c->slot_size;
    moff = c->metrics_off >= 0 ? slot_off + c->metrics_off : FL_OFF_HUD;
    want = 2 * head + 2;
    s1 = __atomic_load_n((const uint64_t *)(base + slot_off), __ATOMIC_ACQUIRE);
    if (s1 != want)
        return fl_cursor_slow(c, dest, 1);
    flen = __atomic_load_n((const uint32_t *)(base + slot_off + 8), __ATOMIC_RELAXED);
    mlen = __atomic_load_n((const uint32_t *)(base + slot_off + 12), __ATOMIC_RELAXED);
    if ((Py_ssize_t)flen != c->frame_bytes || (Py_ssize_t)flen + (Py_ssize_t)mlen > c->payload_cap)
        return fl_cursor_slow(c, dest, 1); /* torn lengths, or a corrupt slot: Python decides */
    src = base + slot_off + 16;
    if (dest != NULL) {
        if (PyObject_GetBuffer(dest, &dv, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
            PyErr_Clear();
            return fl_cursor_slow(c, dest, 0); /* the Python path names what is wrong */
        }
        if (dv.len < (Py_ssize_t)flen) {
            PyBuffer_Release(&dv);
            return fl_cursor_slow(c, dest, 0);
        }
        fl_read_into(dv.buf, src, flen);
        PyBuffer_Release(&dv);
        data = dest;
        Py_INCREF(data);
    } else {
        data = fl_read_bytes(src, flen);
        if (data == NULL)
            return NULL;
    }
    meta = fl_read_meta(src + flen, mlen);
    if (meta == NULL) {
        Py_DECREF(data);
        return NULL;
    }
    for (int i = 0; i < 3; i++)
        bits[i] = __atomic_load_n((const uint64_t *)(base + moff + 8 * i), __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    s2 = __atomic_load_n((const uint64_t *)(base + slot_off), __ATOMIC_RELAXED);
    if (s2 != s1) {
        Py_DECREF(data);
        Py_DECREF(meta);
        return fl_cursor_slow(c, dest, 1);
    }
    for (int i = 0; i < 3; i++) {
        memcpy(&d, &bits[i], 8);
        mvals[i] = PyFloat_FromDouble(d);
        if (mvals[i] == NULL) {
            while (--i >= 0)
                Py_DECREF(mvals[i]);
            Py_DECREF(data);
            Py_DECREF(meta);
            return NULL;
        }
    }
    metrics = fl_new_record(c->metrics_type, c->metrics_slot, mvals, FL_NMETRICS);
    if (metrics == NULL) {
        Py_DECREF(data);
        Py_DECREF(meta);
        return NULL;
    }
    /* Three floats can never be part of a reference cycle: leave the collector out, as
     * CPython does for tuples of atomic values (a tracked object per read would start a
     * young-generation collection every few hundred reads). */
    PyObject_GC_UnTrack(metrics);
    vals[6] = PyLong_FromUnsignedLongLong(head);
    if (vals[6] == NULL) {
        Py_DECREF(data);
        Py_DECREF(meta);
        Py_DECREF(metrics);
        return NULL;
    }
    vals[0] = data;
    vals[1] = c->width; Py_INCREF(c->width);
    vals[2] = c->height; Py_INCREF(c->height);
    vals[3] = c->channels; Py_INCREF(c->channels);
    vals[4] = metrics;
    vals[5] = meta;
    vals[7] = c->generation; Py_INCREF(c->generation);
    out = fl_new_record(c->frame_type, c->frame_slot, vals, FL_NFRAME);
    /* Likewise the frame, when every value in it is atomic (its data our own bytes and not
     * the caller's object, whose references we do not know); width, height, channels and
     * generation are ints. */
    if (out != NULL && dest == NULL)
        PyObject_GC_UnTrack(out);
    return out;
}

static PyObject *
FastLaneCursor_latest_frame(FastLaneCursor *c, PyObject *Py_UNUSED(ignored))
{
    return fl_cursor_read(c, NULL);
}

static PyObject *
FastLaneCursor_read_into(FastLaneCursor *c, PyObject *dest)
{
    return fl_cursor_read(c, dest);
}

static int
FastLaneCursor_traverse(FastLaneCursor *c, visitproc visit, void *arg)
{
    Py_VISIT(c->words);
    Py_VISIT(c->frame_type);
    Py_VISIT(c->metrics_type);
    Py_VISIT(c->width);
    Py_VISIT(c->height);
    Py_VISIT(c->channels);
    Py_VISIT(c->generation);
    Py_VISIT(c->slow);
    return 0;
}

static int
FastLaneCursor_clear(FastLaneCursor *c)
{
    Py_CLEAR(c->slow);
    Py_CLEAR(c->frame_type);
    Py_CLEAR(c->metrics_type);
    Py_CLEAR(c->width);
    Py_CLEAR(c->height);
    Py_CLEAR(c->channels);
    Py_CLEAR(c->generation);
    Py_CLEAR(c->words);
    return 0;
}

static void
FastLaneCursor_dealloc(FastLaneCursor *c)
{
    PyObject_GC_UnTrack(c);
    FastLaneCursor_clear(c);
    PyObject_GC_Del(c);
}

static PyMethodDef FastLaneCursor_methods[] = {
    {"latest_frame", (PyCFunction)FastLaneCursor_latest_frame, METH_NOARGS,
     "The newest complete frame as a frame_type (or slow(None, tried)'s answer)."},
    {"read_into", (PyCFunction)FastLaneCursor_read_into, METH_O,
     "Like latest_frame, copying the pixels into dest, which becomes the frame's data."},
    {NULL, NULL, 0, NULL}
};

static PyTypeObject FastLaneCursorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mosaic_sdk.shm._atomics.FastLaneCursor",
    .tp_doc = "A FastLane reader's newest-frame read in one call (made by SharedWords.fastlane_cursor).",
    .tp_basicsize = sizeof(FastLaneCursor),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)FastLaneCursor_dealloc,
    .tp_traverse = (traverseproc)FastLaneCursor_traverse,
    .tp_clear = (inquiry)FastLaneCursor_clear,
    .tp_methods = FastLaneCursor_methods,
};
