"""Start-up hook of the Gaudi-stack leg only (tests/gaudi_standin is on PYTHONPATH there, nowhere else).

optimum-habana imports ``torchvision.transforms`` (its GLM-4V tokenizer). PyPI's torchvision is a CUDA build: beside
the CPU torch its ops library does not load, and its import then fails registering fake kernels for ``nms`` and
``qnms``, whose schemas that library would have defined. This defines those two schemas (no kernels) right before
torchvision is first imported, so its Python parts (transforms) import; its detection ops stay unavailable.
"""
import sys

_LIBS = []


class _DefineTorchvisionSchemas:
    def find_spec(self, name, path=None, target=None):
        if name != "torchvision":
            return None
        sys.meta_path.remove(self)
        import torch

        lib = torch.library.Library("torchvision", "FRAGMENT")
        for op in ("nms", "qnms"):
            try:
                lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            except RuntimeError:  # already defined: the ops library did load
                pass
        _LIBS.append(lib)
        return None


sys.meta_path.insert(0, _DefineTorchvisionSchemas())
