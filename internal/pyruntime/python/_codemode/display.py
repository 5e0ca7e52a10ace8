"""Images and files a cell produces, sent to the host at the end of the cell.

Images: matplotlib figures left open, PIL images and anything passed to
show_image(). Files: what the cell wrote under /workspace/out, and what it
passed to publish(). The host downscales images to its budget and serves
files as MCP resources while the session lives.
"""

import base64
import io
import os
import sys

OUT_DIR = "/workspace/out"


class Display:
    def __init__(self, rpc, config):
        self._rpc = rpc
        self._max_pixels = int(config.get("image_max_pixels") or 1_000_000)
        self._seen = {}  # path under OUT_DIR -> (size, mtime) already published

    # --- images -------------------------------------------------------------

    def show_image(self, obj, name=None):
        """Return an image to the client: PNG/JPEG bytes, a file path, a PIL
        image or a matplotlib figure."""
        data, mime = self._encode(obj)
        self._rpc.call("artifact", {"kind": "image", "mime": mime, "name": name or "",
                                    "data": base64.b64encode(data).decode("ascii")})

    def _encode(self, obj):
        if isinstance(obj, (bytes, bytearray, memoryview)):
            data = bytes(obj)
            return data, _sniff(data)
        if isinstance(obj, (str, os.PathLike)):
            with open(obj, "rb") as f:
                data = f.read()
            return data, _sniff(data)
        if hasattr(obj, "savefig"):  # matplotlib Figure
            return self._figure_png(obj), "image/png"
        if type(obj).__module__.startswith("PIL.") and hasattr(obj, "save"):
            buf = io.BytesIO()
            img = obj
            if img.mode not in ("RGB", "RGBA", "L", "LA", "P"):
                img = img.convert("RGBA")
            img.save(buf, format="PNG")
            return buf.getvalue(), "image/png"
        raise TypeError("show_image() takes PNG/JPEG bytes, a path, a PIL image or a matplotlib figure, not %s"
                        % type(obj).__name__)

    def _figure_png(self, fig):
        # Render at a resolution that fits the pixel budget, so the host
        # rarely has to downscale (which blurs text).
        w, h = fig.get_size_inches()
        dpi = fig.dpi
        if w * h * dpi * dpi > self._max_pixels:
            dpi = (self._max_pixels / (w * h)) ** 0.5
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        return buf.getvalue()

    def is_image(self, value):
        """Whether a cell's last value should be shown as an image."""
        mod = type(value).__module__
        return (mod.startswith("PIL.") and hasattr(value, "save") and hasattr(value, "size")) or \
               (mod.startswith("matplotlib.") and hasattr(value, "savefig"))

    def flush_figures(self):
        """Send every open matplotlib figure and close it."""
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        for num in plt.get_fignums():
            fig = plt.figure(num)
            try:
                self.show_image(fig)
            finally:
                plt.close(fig)

    # --- files --------------------------------------------------------------

    def publish(self, path, name=None):
        """Return a file to the client as a resource link."""
        path = os.fspath(path)
        with open(path, "rb") as f:
            data = f.read()
        if name is None:
            name = os.path.relpath(path, OUT_DIR) if _under(path, OUT_DIR) else os.path.basename(path)
        return self._rpc.call("artifact", {"kind": "file", "name": name,
                                           "data": base64.b64encode(data).decode("ascii")})

    def flush_out_dir(self):
        """Publish files under /workspace/out that are new or changed."""
        if not os.path.isdir(OUT_DIR):
            return
        for root, dirs, files in os.walk(OUT_DIR):
            dirs.sort()
            for fn in sorted(files):
                path = os.path.join(root, fn)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                key = (st.st_size, st.st_mtime_ns)
                if self._seen.get(path) == key:
                    continue
                self._seen[path] = key
                self.publish(path)


def _under(path, root):
    path = os.path.abspath(path)
    return path == root or path.startswith(root + os.sep)


def _sniff(data):
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    raise ValueError("show_image(): the data is not a PNG, JPEG, GIF or WebP image")
