"""Makes torch.distributed's TCPStore default to its non-libuv server.

Debian's python3-torch 2.6 is built without libuv, yet TCPStore asks for
libuv unless told otherwise, and torchrun's rendezvous (static, c10d) and
agent create theirs without saying: torchrun fails at once with "use_libuv
was requested but PyTorch was build without libuv support". The environment
variable USE_LIBUV=0 (set in the image) reaches only the stores made in
torch/distributed/rendezvous.py and elastic/utils/distributed.py.

edl_libuv_off.pth, beside this file in dist-packages, imports it when Python
starts. It costs nothing until torch.distributed is imported: then, once the
package has run, its TCPStore becomes a subclass whose use_libuv defaults to
False (an explicit use_libuv=True is still passed on), in the package and
in the modules it has imported.
"""
import importlib.abc
import importlib.machinery
import sys

_TARGET = "torch.distributed"


def _patch(module):
    base = getattr(module, "TCPStore", None)
    if base is None or getattr(base, "_edl_libuv_off", False):
        return

    class TCPStore(base):
        _edl_libuv_off = True
        __doc__ = base.__doc__

        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    TCPStore.__module__ = base.__module__
    TCPStore.__qualname__ = base.__qualname__
    # The modules that took TCPStore while the package ran (rendezvous.py,
    # whose env:// stores torchrun's workers create) hold the original.
    for name, mod in list(sys.modules.items()):
        if (name == "torch._C._distributed_c10d" or name.startswith(_TARGET)) and \
                getattr(mod, "TCPStore", None) is base:
            mod.TCPStore = TCPStore


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != _TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


if not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.insert(0, _Finder())
