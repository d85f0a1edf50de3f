"""A lean FlatBuffers writer and reader for the command channel's tables: the wire format of
``schema/shm_commands.fbs`` exactly as the FlatBuffers runtime writes it, in a few ``struct``
calls per table instead of dozens of calls per field.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U16 = struct.Struct("<H")
_NULS = bytes(8)

# generated ``builder.Prepend<Type>Slot`` -> struct code
_SLOT_TYPES = "Bool Uint8 Uint16 Uint32 Uint64 Int8 Int16 Int32 Int64 Float32 Float64".split()
_SLOT_CODES = {f"Prepend{t}Slot": code for t, code in zip(_SLOT_TYPES, "?BHIQbhiqfd", strict=True)}
# ``v:<dtype>`` vector element -> struct code
_VEC_CODES = {"u1": "B", "u4": "I", "u8": "Q", "i4": "i", "i8": "q", "f4": "f", "f8": "d"}
_STRUCTS = {"vec3": ("3d", 24), "quat": ("4d", 32)}


class _Recorder:
    """Stands in for a ``flatbuffers.Builder``: records what a generated function asks of it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Callable[..., int]:
        def record(*args: Any) -> int:
            self.calls.append((name, args))
            return 0

        return record


@dataclass
class Field:
    """One field of a table as it travels."""

    attr: str  # the dataclass attribute
    slot: int  # vtable slot
    kind: str  # "scalar", "struct", "str", "bytes", "vec", "vstr", "vtable", "table", "union"
    code: str = ""  # struct code of a scalar, a struct, or a vector's elements
    size: int = 4  # bytes inline in the table
    default: Any = 0  # schema default of a scalar (absent = this value)
    sub: TableSpec | None = None  # the spec of a child table (vector)
    encode: Callable[[Any], Any] | None = None  # dataclass value -> wire scalar
    decode: Callable[[Any], Any] | None = None  # wire scalar -> dataclass value
    absent: Any = None  # a str's value when absent; a child table's class when it has one

    def __post_init__(self) -> None:
        self.inline = 0 if self.kind == "scalar" else 1 if self.kind == "struct" else 2
        self.reader = _reader(self)
        self.missing = _missing(self)
        self.writer = _writer(self) if self.inline == 2 else None


class TableSpec:
    """How one dataclass travels as one table: fields in inline order, slot count.

    The field kinds come from ``services.FIELDS``; each field's vtable slot, scalar type and
    default come from flatc's generated ``<Table>Add<Field>`` functions (:meth:`of` calls
    them on a recorder), so the slots cannot drift from the schema. A table is written as
    ``[vtable][table]`` then what it refers to (children after their parent), starting 4
    bytes past a multiple of 8 with its fields largest first, so every scalar is aligned."""

    def __init__(self, cls: type, nslots: int, fields_: list[Field]) -> None:
        self.cls = cls
        self.nslots = nslots
        # largest first: a table starting 4 past a multiple of 8 then needs no padding
        self.fields = sorted(fields_, key=lambda f: -(8 if f.size >= 8 else f.size))
        self.by_slot = sorted(fields_, key=lambda f: f.slot)
        self._vt_head = struct.Struct(f"<HH{nslots}H")
        self._vtlen = 4 + 2 * nslots
        self._slots = struct.Struct(f"<{nslots}H")
        self._read = [(f.attr, f.slot, f.reader, f.missing) for f in self.by_slot]
        #: ``write(buf, obj) -> position`` appends ``obj`` as a table (and what it refers to);
        #: ``read(buf, pos) -> obj`` reads one; ``read_values(buf, pos)`` gives its values in
        #: slot order. Each is a function compiled for this table (see ``_compile``).
        self.write, self.read, self.read_values, self.source = _compile(self)

    @classmethod
    def of(
        cls,
        message_cls: type,
        kinds: dict[str, str],
        generated: Any,
        table: str | None = None,
        children: dict[str, TableSpec] | None = None,
        enums: dict[str, tuple[str, ...]] | None = None,
    ) -> TableSpec:
        """The spec of ``message_cls`` whose fields travel as ``kinds`` in the generated
        module's table ``table`` (default: the class name). ``children`` gives the specs of
        nested tables by class name; ``enums`` the names of each enum kind's values."""
        table = table or message_cls.__name__
        rec = _Recorder()
        getattr(generated, f"{table}Start")(rec)
        (start,) = [args for name, args in rec.calls if name == "StartObject"]
        out = []
        defaults = {f.name: f.default for f in fields(message_cls)}
        for attr, kind in kinds.items():
            rec.calls.clear()
            getattr(generated, f"{table}Add{camel(attr)}")(rec, 0)
            (method, args) = rec.calls[-1]
            slot, default = int(args[0]), args[2]
            # a child table reads as None when absent only where the dataclass says None
            absent = None if defaults.get(attr, 0) is None else ...
            kids, names = children or {}, enums or {}
            out.append(_field(attr, kind, slot, method, default, kids, names, absent))
        return cls(message_cls, int(start[0]), out)

    # -- writing -----------------------------------------------------------------------------
    def write_any(self, buf: bytearray, obj: Any) -> int:
        """``write`` for any value (fields that are None or defaults left out of the table)."""
        vt = [0] * self.nslots
        codes = ["<i"]
        vals: list[Any] = [0]
        size = 4
        later: list[tuple[int, Callable[[bytearray, Any], int], Any]] = []
        for f in self.fields:
            v = getattr(obj, f.attr)
            inline = f.inline
            if inline == 0:
                if f.encode is not None:
                    v = f.encode(v)
                if v == f.default:
                    continue  # absent reads as the default, as the runtime's builder does
                codes.append(f.code)
                vals.append(v)
            elif inline == 1:
                codes.append(f.code)
                vals.extend(v)
            else:
                if v is None or (f.kind == "bytes" and not v):
                    continue  # absent: reads as None, "", b"" or []
                codes.append("I")
                vals.append(0)
                assert f.writer is not None
                later.append((size, f.writer, v))
            vt[f.slot] = size
            size += f.size
        vtlen = self._vtlen
        start = len(buf)
        v_at = start + (4 - start - vtlen) % 8
        if v_at > start:
            buf += bytes(v_at - start)
        buf += self._vt_head.pack(vtlen, size, *vt)
        t_at = v_at + vtlen
        vals[0] = vtlen
        try:
            buf += struct.pack("".join(codes), *vals)
        except struct.error as exc:
            name = self.cls.__name__
            raise ValueError(f"{name}: a value does not fit its field ({exc})") from exc
        for rel, writer, v in later:
            at = t_at + rel
            _U32.pack_into(buf, at, writer(buf, v) - at)
        return t_at

    # -- reading -----------------------------------------------------------------------------
    def read_fields(self, buf: bytes, pos: int) -> dict[str, Any]:
        """The table at ``pos`` as ``{attr: value}``."""
        offs = self._offsets(buf, pos)
        return {
            attr: reader(buf, pos + o) if (o := offs[slot]) else missing()
            for attr, slot, reader, missing in self._read
        }

    def _offsets(self, buf: bytes, pos: int) -> tuple[int, ...]:
        """Each slot's field offset in the table at ``pos`` (0: absent)."""
        vt = pos - _I32.unpack_from(buf, pos)[0]
        if vt < 0 or pos + 4 > len(buf):
            raise ValueError(f"table at {pos} has its vtable outside the buffer ({vt})")
        (vtsize,) = _U16.unpack_from(buf, vt)
        n = (vtsize - 4) // 2
        if n >= self.nslots:
            offs = self._slots.unpack_from(buf, vt + 4)
        else:  # written from an older schema: the newer fields read as absent
            offs = struct.unpack_from(f"<{max(n, 0)}H", buf, vt + 4) + (0,) * (self.nslots - n)
        return offs  # type: ignore[no-any-return]


def _compile(spec: TableSpec) -> tuple[Any, Any, Any, str]:
    """Python functions specialised to one table: its ``write``, ``read`` and ``read_values``.

    A message whose every field is present (none None) is written with all fields, at fixed
    places: one ``struct`` pack puts the vtable and the table's inline part, then each string,
    vector or child table is appended and its offset patched in. Other values go through
    ``write_any``. A table is read with one unpack of its vtable when the vtable holds every
    slot (else ``read_fields`` takes the general path).
    """
    env: dict[str, Any] = {
        "spec": spec,
        "cls": spec.cls,
        "struct_error": struct.error,
        "U32": _U32,
        "I32": _I32.unpack_from,
        "U16": _U16.unpack_from,
        "SLOTS": spec._slots.unpack_from,
        "ZEROS": bytes(8),
    }
    vt = [0] * spec.nslots
    codes, values, body, patches = ["<HH", f"{spec.nslots}H", "i"], [], [], []
    size = 4
    for i, f in enumerate(spec.fields):
        body.append(f"    v{i} = obj.{f.attr}")
        if f.inline == 0:
            if f.encode is not None:
                env[f"e{i}"] = f.encode
                body.append(f"    v{i} = e{i}(v{i})")
            values.append(f"v{i}")
            codes.append(f.code)
        elif f.inline == 1:
            values.append(f"*v{i}")
            codes.append(f.code)
        else:
            body.append(f"    if v{i} is None:\n        return spec.write_any(buf, obj)")
            env[f"w{i}"] = f.writer
            values.append("0")
            codes.append("I")
            patches.append(f"    o = t + {size}\n    U32.pack_into(buf, o, w{i}(buf, v{i}) - o)")
        vt[f.slot] = size
        size += f.size
    vtlen = 4 + 2 * spec.nslots
    env["HEAD"] = struct.Struct("".join(codes)).pack
    head = ", ".join([str(vtlen), str(size), *map(str, vt), str(vtlen), *values])
    name = spec.cls.__name__
    write = [
        "def write(buf, obj):",
        *body,
        "    at = len(buf)",
        f"    gap = (4 - at - {vtlen}) % 8",
        "    if gap:",
        "        buf += ZEROS[:gap]",
        f"    t = at + gap + {vtlen}",
        "    try:",
        f"        buf += HEAD({head})",
        "    except struct_error as exc:",
        f'        raise ValueError(f"{name}: a value does not fit its field ({{exc}})") from exc',
        *patches,
        "    return t",
    ]
    reads = []
    for f in spec.by_slot:
        k, o = f.slot, f"o{f.slot}"
        env[f"r{k}"], env[f"m{k}"] = f.reader, f.missing
        if f.inline == 2:
            reads.append((f.attr, f"r{k}(buf, pos + {o}) if {o} else m{k}()"))
            continue
        # scalars and structs: unpacked in place, the absent value a constant
        env[f"u{k}"], env[f"d{k}"] = struct.Struct("<" + f.code).unpack_from, f.missing()
        raw = f"u{k}(buf, pos + {o})" + ("[0]" if f.inline == 0 else "")
        if f.decode is not None:
            env[f"c{k}"] = f.decode
            raw = f"c{k}({raw})"
        reads.append((f.attr, f"{raw} if {o} else d{k}"))
    offsets = ", ".join(f"o{k}" for k in range(spec.nslots))
    read_head = [
        "    vt = pos - I32(buf, pos)[0]",
        "    if vt < 0 or U16(buf, vt)[0] < " + str(vtlen) + ":",
        "        return {slow}",
        f"    {offsets}, = SLOTS(buf, vt + 4)" if spec.nslots else "    pass",
    ]
    kwargs = ", ".join(f"{attr}={expr}" for attr, expr in reads)
    ordered = ", ".join(expr for _, expr in reads)
    source = "\n".join(
        [
            *write,
            "",
            "def read(buf, pos):",
            *(line.format(slow="cls(**spec.read_fields(buf, pos))") for line in read_head),
            f"    return cls({kwargs})",
            "",
            "def read_values(buf, pos):",
            *(line.format(slow="list(spec.read_fields(buf, pos).values())") for line in read_head),
            f"    return [{ordered}]",
        ]
    )
    exec(compile(source, f"<wire table {name}>", "exec"), env)  # noqa: S102
    return env["write"], env["read"], env["read_values"], source


@functools.cache
def camel(name: str) -> str:
    """``snake_name`` as flatc spells it in generated names (``SnakeName``)."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _field(
    attr: str,
    kind: str,
    slot: int,
    method: str,
    default: Any,
    children: dict[str, TableSpec],
    enums: dict[str, tuple[str, ...]],
    absent: Any,
) -> Field:
    if kind in _STRUCTS:
        code, size = _STRUCTS[kind]
        return Field(attr, slot, "struct", code, size)
    if method in _SLOT_CODES:
        code = _SLOT_CODES[method]
        size = struct.calcsize(code)
        if kind in enums:
            to_wire = functools.partial(enum_value, kind, enums[kind])
            from_wire = functools.partial(enum_name, kind, enums[kind])
            return Field(attr, slot, "scalar", code, size, default, None, to_wire, from_wire)
        conv = bool if code == "?" else None
        return Field(attr, slot, "scalar", code, size, default, None, conv, conv)
    if kind in ("str", "ostr"):  # absent reads as "" (str) or None (ostr)
        return Field(attr, slot, "str", absent="" if kind == "str" else None)
    if kind == "bytes":
        return Field(attr, slot, "bytes", "B", default=b"")
    if kind.startswith("v:"):
        return Field(attr, slot, "vec", _VEC_CODES[kind[2:]])
    if kind == "vstr":
        return Field(attr, slot, "vstr")
    if kind.startswith("vt:"):
        return Field(attr, slot, "vtable", sub=children[kind[3:]])
    if kind.startswith("t:"):
        sub = children[kind[2:]]
        return Field(attr, slot, "table", sub=sub, absent=None if absent is None else sub.cls)
    if kind == "union":  # written from (spec, value), read as the table's position
        return Field(attr, slot, "union")
    raise ValueError(f"field {attr}: kind {kind!r} is not one the wire codec knows")


def enum_value(kind: str, names: tuple[str, ...], value: str) -> int:
    if value not in names:
        raise ValueError(f"{kind} {value!r} is not one of {', '.join(names)}")
    return names.index(value)


def enum_name(kind: str, names: tuple[str, ...], raw: int) -> str:
    if not 0 <= raw < len(names):
        raise ValueError(f"{kind} value {raw} is not one of {', '.join(names)}")
    return names[raw]


# -- writing ----------------------------------------------------------------------------------
def write_string(buf: bytearray, text: str) -> int:
    """Append a string (u32 length, UTF-8 bytes, NUL); returns its position."""
    at = write_bytes(buf, text.encode())
    buf += b"\0"
    return at


def _align4(buf: bytearray) -> int:
    """Pad ``buf`` to a multiple of 4 bytes; returns its length."""
    buf += bytes(-len(buf) & 3)
    return len(buf)


def write_bytes(buf: bytearray, data: bytes) -> int:
    """Append a ``[ubyte]`` vector; returns its position."""
    at = _align4(buf)
    buf += _U32.pack(len(data))
    buf += data
    return at


def _vector_writer(code: str) -> Callable[[bytearray, Any], int]:
    width = struct.calcsize(code)
    align = 8 if width == 8 else 4
    dtype = np.dtype(f"<{code}")

    def write(buf: bytearray, values: Any) -> int:
        if isinstance(values, np.ndarray):  # cast and copy in one go
            data = np.ascontiguousarray(values, dtype=dtype).tobytes()
            n = len(data) // width
        else:
            n = len(values)
            try:
                data = struct.pack(f"<{n}{code}", *values)
            except struct.error as exc:
                raise ValueError(f"a vector value does not fit its type {code!r} ({exc})") from exc
        at = len(buf)
        gap = (-(at + 4)) % align  # the length word sits just before the data
        if gap:
            buf += bytes(gap)
            at += gap
        buf += _U32.pack(n)
        buf += data
        return at

    return write


def write_strings(buf: bytearray, texts: Any) -> int:
    """Append a vector of strings (its offsets, then each string); returns its position."""
    datas = [str(t).encode() for t in texts]
    n = len(datas)
    at = _align4(buf)
    pos = at + 4 + 4 * n  # where the first string goes
    offsets, parts = [], []
    for k, data in enumerate(datas):
        offsets.append(pos - (at + 4 + 4 * k))
        m = len(data)
        size = (m + 8) & ~3  # length word, bytes, NUL, padding to 4
        parts.append(_U32.pack(m) + data + _NULS[: size - 4 - m])
        pos += size
    buf += struct.pack(f"<{n + 1}I", n, *offsets)
    buf += b"".join(parts)
    return at


def _writer(f: Field) -> Callable[[bytearray, Any], int]:
    """Appends the out-of-line part of ``f`` (a string, vector or table); returns its position."""
    kind = f.kind
    if kind == "str":
        return lambda buf, v: write_string(buf, v)
    if kind == "bytes":
        return lambda buf, v: write_bytes(buf, bytes(v))
    if kind == "union":
        return lambda buf, v: int(v[0].write(buf, v[1]))
    if kind == "vec":
        return _vector_writer(f.code)
    sub = f.sub
    if kind == "table":
        assert sub is not None
        return lambda buf, v: int(sub.write(buf, v))

    if sub is None:
        return write_strings

    def write_offsets(buf: bytearray, v: Any) -> int:
        items = list(v)
        at = _align4(buf)
        buf += _U32.pack(len(items))
        buf += bytes(4 * len(items))
        for k, item in enumerate(items):
            child = sub.write(buf, item)
            slot = at + 4 + 4 * k
            _U32.pack_into(buf, slot, child - slot)
        return at

    return write_offsets


# -- reading ----------------------------------------------------------------------------------
def _deref(buf: bytes, at: int) -> int:
    target = at + _U32.unpack_from(buf, at)[0]
    if target + 4 > len(buf):
        raise ValueError(f"offset at {at} points outside the buffer ({target})")
    return target


def read_string(buf: bytes, at: int) -> str:
    """The string referred to by the offset at ``at``."""
    return read_bytes(buf, at).decode()


def read_bytes(buf: bytes, at: int) -> bytes:
    """The ``[ubyte]`` vector referred to by the offset at ``at``."""
    p = _deref(buf, at)
    n = _U32.unpack_from(buf, p)[0]
    if p + 4 + n > len(buf):
        raise ValueError(f"vector of {n} bytes at {p} runs past the buffer")
    return bytes(buf[p + 4 : p + 4 + n])


def read_strings(buf: bytes, at: int) -> list[str]:
    """The vector of strings referred to by the offset at ``at``."""
    size = len(buf)
    unpack = _U32.unpack_from
    out = []
    for s in _offsets(buf, at):
        p = s + unpack(buf, s)[0]
        n = unpack(buf, p)[0]
        if p + 4 + n > size:
            raise ValueError(f"string of {n} bytes at {p} runs past the buffer")
        out.append(str(buf[p + 4 : p + 4 + n], "utf-8"))
    return out


def _offsets(buf: bytes, at: int) -> range:
    """The positions of the offsets of the vector referred to by the offset at ``at``."""
    p = _deref(buf, at)
    n = _U32.unpack_from(buf, p)[0]
    if p + 4 + 4 * n > len(buf):
        raise ValueError(f"vector of {n} offsets at {p} runs past the buffer")
    return range(p + 4, p + 4 + 4 * n, 4)


def _reader(f: Field) -> Callable[[bytes, int], Any]:
    """Reads ``f`` whose inline part is at the given position."""
    kind = f.kind
    if kind == "scalar":
        unpack = struct.Struct("<" + f.code).unpack_from
        decode = f.decode
        if decode is None:
            return lambda buf, at: unpack(buf, at)[0]
        return lambda buf, at: decode(unpack(buf, at)[0])
    if kind == "struct":
        return struct.Struct("<" + f.code).unpack_from
    if kind == "str":
        return read_string
    if kind == "bytes":
        return read_bytes
    if kind == "union":
        return _deref
    if kind == "vec":
        code = f.code

        def read_vector(buf: bytes, at: int) -> list[Any]:
            p = _deref(buf, at)
            n = _U32.unpack_from(buf, p)[0]
            return list(struct.unpack_from(f"<{n}{code}", buf, p + 4))

        return read_vector
    sub = f.sub
    if kind == "table":
        assert sub is not None
        return lambda buf, at: sub.read(buf, _deref(buf, at))
    if kind == "vstr":
        return read_strings
    assert sub is not None
    return lambda buf, at: [sub.read(buf, _deref(buf, s)) for s in _offsets(buf, at)]


def _missing(f: Field) -> Callable[[], Any]:
    """The value of ``f`` when the table does not hold it (a new object each call)."""
    kind = f.kind
    if kind == "scalar":
        value = f.decode(f.default) if f.decode is not None else f.default
        return lambda: value
    if kind == "struct":
        unit: tuple[float, ...] = (1.0, 0.0, 0.0, 0.0) if f.code == "4d" else (0.0, 0.0, 0.0)
        return lambda: unit
    if kind == "str":
        text = f.absent
        return lambda: text
    if kind == "bytes":
        return lambda: b""
    if kind == "union":
        return lambda: None
    if kind == "table":
        factory = f.absent
        return (lambda: None) if factory is None else factory
    return list
