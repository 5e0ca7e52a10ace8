# codemode bootstrap: passed to the interpreter with -c. It reads the boot
# frame (the runtime's sources and settings) from stdin, installs the sources
# as in-memory modules and hands over to the runtime. Nothing is written to
# the sandbox's filesystem, so no host volume is shared.
import json, os, sys
from importlib.machinery import ModuleSpec


def _read(n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(0, n - len(buf))
        if not chunk:
            os._exit(0)  # host went away before booting us
        buf += chunk
    return buf


class _MemoryModules:
    """Meta-path finder and loader for the runtime's embedded sources."""

    PREFIX = "/codemode/"

    def __init__(self, sources, packages):
        self.sources = sources
        self.packages = set(packages)

    def origin(self, name):
        path = name.replace(".", "/")
        return self.PREFIX + (path + "/__init__.py" if name in self.packages else path + ".py")

    def find_spec(self, name, path=None, target=None):
        if name not in self.sources:
            return None
        spec = ModuleSpec(name, self, origin=self.origin(name), is_package=name in self.packages)
        spec.has_location = True
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__spec__.name
        code = compile(self.sources[name], self.origin(name), "exec", dont_inherit=True)
        exec(code, module.__dict__)

    def get_source(self, name):
        return self.sources.get(name)


def _boot():
    header = _read(5)
    size = int.from_bytes(header[1:], "big")
    boot = json.loads(_read(size))
    sys.meta_path.insert(0, _MemoryModules(boot["modules"], boot["packages"]))
    entry = __import__(boot["entry"], fromlist=["main"])
    entry.main(boot.get("config") or {}, boot.get("preload") or (), boot.get("direct"))


# A zygote runs this file under another name to define the finder without
# booting (see Bundle.Warm).
if __name__ == "__main__":
    _boot()
