"""SipHash-2-4 and the AM frame MAC (net/siphash.cc, net/am_frame.h), so that
the switch can tell a node with the cluster's key from one without."""
import struct

M64 = (1 << 64) - 1


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def siphash24(k0, k1, data):
    v0 = 0x736F6D6570736575 ^ k0
    v1 = 0x646F72616E646F6D ^ k1
    v2 = 0x6C7967656E657261 ^ k0
    v3 = 0x7465646279746573 ^ k1

    def rounds(n):
        nonlocal v0, v1, v2, v3
        for _ in range(n):
            v0 = (v0 + v1) & M64
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & M64
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & M64
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & M64
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)

    n = len(data)
    whole = n - n % 8
    for (m,) in struct.iter_unpack("<Q", data[:whole]):
        v3 ^= m
        rounds(2)
        v0 ^= m
    last = (n & 0xFF) << 56
    for i, byte in enumerate(data[whole:]):
        last |= byte << (8 * i)
    v3 ^= last
    rounds(2)
    v0 ^= last
    v2 ^= 0xFF
    rounds(4)
    return v0 ^ v1 ^ v2 ^ v3


def parse_key(text):
    """fox.key's 32 hexadecimal digits -> (k0, k1) as am_config.cc reads them."""
    if len(text) != 32:
        raise ValueError("a key is 32 hexadecimal digits")
    return int(text[:16], 16), int(text[16:], 16)


HEADER = 56
MAC_OFFSET = 48
MAGIC = b"FOXA"


def frame_mac_ok(key, frame):
    """True when `frame` (a UDP payload) is an AM frame whose MAC checks with `key`
    ((k0, k1)); False for a bad MAC; None when it is not an AM frame at all."""
    if len(frame) < HEADER or frame[:4] != MAGIC:
        return None
    payload = struct.unpack_from("<H", frame, 42)[0]
    if HEADER + payload > len(frame):
        return False
    body = frame[:MAC_OFFSET] + b"\0" * 8 + frame[MAC_OFFSET + 8:HEADER + payload]
    return siphash24(key[0], key[1], body) == struct.unpack_from("<Q", frame, MAC_OFFSET)[0]


def seal_frame(key, job, source, destination, records, flags=4):
    """An active-message frame (net/am_frame.h) of `job` carrying `records` ((ebb, handler, data)...),
    sealed with `key` ((k0, k1)): what boot/fox's switch sends a node's agent (apps/agent)."""
    payload = b""
    for ebb, handler, data in records:
        payload += struct.pack("<IHH", ebb, handler, len(data)) + data + b"\0" * ((8 - len(data) % 8) % 8)
    header = MAGIC + struct.pack("<BBHQIIIIQHHI", 1, flags, len(records), job, source, destination, 0, 0, 0, 0,
                                 len(payload), 0)
    frame = header + b"\0" * 8 + payload
    mac = siphash24(key[0], key[1], frame)
    return header + struct.pack("<Q", mac) + payload


def frame_records(frame):
    """(job, source, [(ebb, handler, data)...]) of a frame whose MAC checked, or None if malformed."""
    if len(frame) < HEADER or frame[:4] != MAGIC:
        return None
    count, job, source = struct.unpack_from("<HQI", frame, 6)
    length = struct.unpack_from("<H", frame, 42)[0]
    records, i, end = [], HEADER, HEADER + length
    if end > len(frame):
        return None
    for _ in range(count):
        if i + 8 > end:
            return None
        ebb, handler, n = struct.unpack_from("<IHH", frame, i)
        if i + 8 + n > end:
            return None
        records.append((ebb, handler, frame[i + 8:i + 8 + n]))
        i += 8 + n + (8 - n % 8) % 8
    return job, source, records


if __name__ == "__main__":  # the reference vector of the SipHash paper
    k = bytes(range(16))
    k0, k1 = struct.unpack("<QQ", k)
    assert siphash24(k0, k1, bytes(range(15))) == 0xA129CA6149BE45E5
    print("siphash: ok")
