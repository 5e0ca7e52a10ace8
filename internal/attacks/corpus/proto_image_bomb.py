# attack: proto-image-bomb
# category: protocol
# expect: blocked: a 1 MiB PNG that decodes to 512 MiB (8000x8000, 16-bit RGBA) passed to show_image() is refused by size before it is decoded: the host's memory stays bounded
# check: rss
# timeout: 60
import zlib
W = H = 8000


def chunk(t, d):
    c = struct.pack(">I", len(d)) + t + d
    return c + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)


co = zlib.compressobj(9)
row = b"\0" * (1 + W * 8)
idat = b"".join([co.compress(row) for _ in range(H)] + [co.flush()])
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", W, H, 16, 6, 0, 0, 0)) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
print("PNG of %d bytes for %dx%d 16-bit RGBA" % (len(png), W, H), flush=True)
try:
    show_image(png)
    blocked("image accepted (the host checks its own memory)")
except Exception as e:  # noqa: BLE001
    blocked("refused: %s" % e)
done()
