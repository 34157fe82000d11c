#!/usr/bin/env python3
"""Independent decoder for TensorBoard event files, used to check dtl's writer.

Standard library only, and deliberately sharing nothing with include/dtl/log/tensorboard.hpp:
CRC32C is computed bit by bit (no table), protobuf is parsed from the wire format.

    decode_tfevents.py FILE

Validates every TFRecord byte by byte (8-byte little-endian length, masked CRC32C of the length,
data, masked CRC32C of the data; no trailing bytes) and that the first event carries a
file_version. Prints one JSON object per line:

    {"wall_time": W, "step": S, "file_version": "brain.Event:2"}
    {"wall_time": W, "step": S, "tag": "Determined/loss", "simple_value": V}

(one line per Summary.Value). Non-finite simple_values are printed as the strings "nan", "inf",
"-inf" so that the output stays strict JSON. Any malformation: a message on stderr, exit status 1.
"""

import json
import math
import struct
import sys


class DecodeError(Exception):
    pass


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_varint(buf: bytes, pos: int):
    result = 0
    for i in range(10):
        if pos >= len(buf):
            raise DecodeError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
    raise DecodeError("varint longer than 10 bytes")


def fields(buf: bytes):
    """Yields (field_number, wire_type, value) of a serialized message."""
    pos = 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise DecodeError("field number 0")
        if wire == 0:
            value, pos = read_varint(buf, pos)
        elif wire == 1:
            if pos + 8 > len(buf):
                raise DecodeError("truncated fixed64")
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            size, pos = read_varint(buf, pos)
            if pos + size > len(buf):
                raise DecodeError("truncated length-delimited field %d" % number)
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 5:
            if pos + 4 > len(buf):
                raise DecodeError("truncated fixed32")
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise DecodeError("unsupported wire type %d (field %d)" % (wire, number))
        yield number, wire, value


def expect(wire: int, wanted: int, what: str):
    if wire != wanted:
        raise DecodeError("%s has wire type %d, expected %d" % (what, wire, wanted))


def as_json_float(x: float):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def decode_value(buf: bytes) -> dict:
    out = {"tag": ""}
    for number, wire, value in fields(buf):
        if number == 1:
            expect(wire, 2, "Value.tag")
            out["tag"] = value.decode("utf-8")
        elif number == 2:
            expect(wire, 5, "Value.simple_value")
            out["simple_value"] = as_json_float(struct.unpack("<f", value)[0])
    return out


def decode_event(buf: bytes) -> list:
    wall_time, step, version, values = 0.0, 0, None, []
    for number, wire, value in fields(buf):
        if number == 1:
            expect(wire, 1, "Event.wall_time")
            wall_time = struct.unpack("<d", value)[0]
        elif number == 2:
            expect(wire, 0, "Event.step")
            step = value - (1 << 64) if value >> 63 else value
        elif number == 3:
            expect(wire, 2, "Event.file_version")
            version = value.decode("utf-8")
        elif number == 5:
            expect(wire, 2, "Event.summary")
            for n, w, v in fields(value):
                if n == 1:
                    expect(w, 2, "Summary.value")
                    values.append(decode_value(v))
    head = {"wall_time": wall_time, "step": step}
    lines = []
    if version is not None:
        lines.append(dict(head, file_version=version))
    lines.extend(dict(head, **v) for v in values)
    return lines


def decode_file(data: bytes) -> list:
    pos, records, out = 0, 0, []
    while pos < len(data):
        at = pos
        if pos + 12 > len(data):
            raise DecodeError("record %d at byte %d: truncated header (%d bytes left)" % (records, at, len(data) - pos))
        length_bytes = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", length_bytes)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if length_crc != masked(crc32c(length_bytes)):
            raise DecodeError("record %d at byte %d: length CRC mismatch" % (records, at))
        pos += 12
        if pos + length + 4 > len(data):
            raise DecodeError("record %d at byte %d: truncated data" % (records, at))
        payload = data[pos:pos + length]
        (data_crc,) = struct.unpack("<I", data[pos + length:pos + length + 4])
        if data_crc != masked(crc32c(payload)):
            raise DecodeError("record %d at byte %d: data CRC mismatch" % (records, at))
        pos += length + 4
        events = decode_event(payload)
        if records == 0 and not (events and "file_version" in events[0]):
            raise DecodeError("first record carries no file_version")
        out.extend(events)
        records += 1
    if records == 0:
        raise DecodeError("no records")
    return out


def main(argv: list) -> int:
    if len(argv) != 2:
        print("usage: decode_tfevents.py FILE", file=sys.stderr)
        return 2
    try:
        with open(argv[1], "rb") as f:
            lines = decode_file(f.read())
    except (OSError, DecodeError, UnicodeDecodeError) as e:
        print("decode_tfevents: %s: %s" % (argv[1], e), file=sys.stderr)
        return 1
    for line in lines:
        print(json.dumps(line, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
