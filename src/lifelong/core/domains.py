"""One vocabulary of image domains for every stream: the Nevis'22 paper's, singular ('object', not 'objects').

A task's `domain` says what its images show; the report's domain slices group tasks by it, so every built-in
stream names its domains from this tuple (a test checks them all). Natural images of things (CLEAR's photos,
ImageNet-CoG's concepts, the facts' scenes, the emoji artwork) are 'object', as ImageNet, COCO and the sketch
dataset are in Nevis'22.
"""

DOMAINS = ("object", "ocr", "face", "texture", "scene", "satellite", "counting", "medical", "xray", "quality", "shape")

# names that older run folders recorded before the vocabulary was one (the report reads them under the new name)
FORMER_NAMES = {"objects": "object", "textures": "texture", "shapes": "shape", "photos": "object", "cog": "object"}
FORMER_NAMES["facts"] = "object"


def canonical_domain(name: str) -> str:
    """`name` in the one vocabulary: a former name ('objects') becomes its current one ('object')."""
    return FORMER_NAMES.get(name, name)
