"""The Nevis'22 streams as data: 97 datasets, and every variant's order by year: FULL (106 tasks), SHORT (29),
TINY (7), DEBUG (2), MAJOR_DOMAIN_ONLY (70), LARGE_DATASET_ONLY (67) and IMAGENET_ONLY (1).

The variants' task lists and years are the reference's (dm_nevis `dm_nevis/streams/nevis_stream.py`,
`NEVIS_STREAM_PER_YEAR`, lines 75-251: DEBUG 76-79, FULL 80-132, SHORT 133-160, TINY 161-171, IMAGENET_ONLY
172-175, MAJOR_DOMAIN_ONLY 176-212, LARGE_DATASET_ONLY 213-250), written with this table's slugs. Facts about them:
MAJOR_DOMAIN_ONLY's meta-train part ("Exclude satellite, face, texture, shape, ocr, quality, medical") is exactly
this table's object and scene tasks before 2019 (43); LARGE_DATASET_ONLY's ("Exclude datasets with less than
10_000 samples, all splits combined") counts the reference's own copies, not this table's `size` column (a
cut on `size` keeps only 24 of its 40); both keep FULL's 2019-2021 part whole. IMAGENET_ONLY is ImageNet alone,
in 2014 (as SHORT places it), a pretraining stream; DEBUG is Pascal 2007 in 1999, then COIL 20 in 2000.

Sources, in order of authority: the task list per year of docs/protocols/nevis.md#the-stream-and-its-variants
(which task is where, and the SHORT and TINY lists with their own years), its [ref] class counts, and the paper's
Appendix L table (type, domain, size, average resolution; Appendix M for the SHORT rows). Where these disagree:

- The Appendix L table puts Graz-02 in 2008 (list: 2010) and Pascal 2012 in 2014 (list: 2013), and lists a
  2019 "UCSD dataset" that the year list does not have: the year list wins (UCSD is not in the stream).
- The extracted table lacks Pascal 2005, Pascal 2006 (taken from Appendix M), 15 Scenes 2008 (taken from
  its 2019 row), 8 Scene Dataset, Extended YaleB and DDSM (sizes and resolutions estimated, marked [est]).
- Type disagreements between the paper's table and the reference code, resolved by the sampled paper's
  task and the dataset's labels, which agree with the reference code in all three cases:
  CelebA: multi-label over its 40 binary attributes (the table says C, but the sampled paper, Kalayeh et
  al. 2017, predicts facial attributes and CelebA has no single-label class other than 10,177 identities);
  Pascal 2012: multi-label over the 20 VOC classes (images hold several objects; VOC classification is
  scored by per-class AP, like Pascal 2007 which the table marks M);
  SUN 397: multi-class, 397 scene categories (the table says M, but SUN397 gives one scene label per image).

`size` is the table's "size" column: for most datasets the train+dev pool D^tr (e.g. MNIST 51,000 = 0.85 x
60,000); the dataset-size slices of reports use it. `resolution` is the table's average (height, width). `split_rule` is
a rule of lifelong.data.splits: explicit where the reference's choice is known ([ref]) or the table's size
pins it down ([size]: size = 0.85 x the official train -> train_test; size = the official train ->
train_val_test / train_val; size ~ 0.68 x all images -> random), else "auto" (the data's official split if
it carries one, else random). Class counts: [spec] = the reference code's count
(docs/protocols/nevis.md#the-stream-and-its-variants); [own] = my reading of the dataset's public release or of the
reference's dataset handler, with the reason beside it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lifelong.core.domains import DOMAINS
from lifelong.core.tasks import TaskKind

C = TaskKind.MULTI_CLASS
M = TaskKind.MULTI_LABEL
META_TEST_FROM_YEAR = 2019


@dataclass(frozen=True)
class NevisDataset:
    """One dataset of the benchmark: what a task built from it declares, and where it was published."""

    name: str  # stable slug: the data folder name and the task name (repeats become name#1)
    display: str  # the paper's name
    kind: TaskKind
    domain: str
    num_classes: int
    size: int  # samples, from the paper's table
    resolution: tuple[int, int]  # average (height, width), from the paper's table
    split_rule: str
    published: str  # the dataset's name and paper, so a user can find it

    def __post_init__(self) -> None:
        if self.domain not in DOMAINS:
            raise ValueError(f"dataset {self.name!r}: domain {self.domain!r} is not one of {DOMAINS}")


@dataclass(frozen=True)
class NevisTask(NevisDataset):
    """One stream position: a dataset in a year."""

    year: int = dataclasses.field(kw_only=True)


def _d(
    name: str,
    display: str,
    kind: TaskKind,
    domain: str,
    classes: int,
    size: int,
    resolution: tuple[int, int],
    rule: str,
    published: str,
) -> NevisDataset:
    """A table row (positional, to keep the table legible)."""
    return NevisDataset(name, display, kind, domain, classes, size, resolution, rule, published)


# fmt: off
_DATASETS = (
    _d("magellan_venus_volcanoes", "Magellan Venus Volcanoes", C, "satellite", 2, 102, (1024, 1024), "auto",  # [spec]
       "Magellan Venus volcanoes, UCI repository (Dua and Graff, 2017); Burl et al., 1998"),
    _d("aberdeen", "Aberdeen face database", C, "face", 90, 468, (519, 417), "random",  # [own] "687 faces of
       "Aberdeen face set (Ian Craw, Aberdeen), Stirling PICS collection"),  # 90 people"; [ref] random split
    _d("landsat", "LandSat UCI repo", C, "satellite", 7, 3764, (3, 3), "train_test",  # [spec] 7 labels, class 6
       "Statlog (Landsat Satellite), UCI repository (Dua and Graff, 2017)"),  # unused; [size] 0.85 x 4,435
    _d("brodatz", "Brodatz", C, "texture", 111, 672, (213, 213), "random",  # [own] 111 plates (ref handler)
       "Brodatz, Textures: a photographic album for artists and designers, 1966 (USC-SIPI textures)"),
    _d("olivetti", "Olivetti Face Dataset", C, "face", 40, 288, (80, 70), "random",  # [own] 40 subjects
       "ORL / Olivetti faces (Samaria and Harter, 1994)"),
    _d("coil20", "COIL 20", C, "object", 20, 973, (128, 128), "random",  # [own] 20 objects; [size] 0.68 x 1,440
       "COIL-20, Columbia Object Image Library (Nene, Nayar and Murase, 1996)"),
    _d("coil100", "COIL 100", C, "object", 100, 6120, (128, 128), "coil100",  # [spec]
       "COIL-100, Columbia Object Image Library (Nene, Nayar and Murase, 1996)"),
    _d("mpeg7", "MPEG-7", C, "shape", 70, 943, (341, 388), "random",  # [own] CE-Shape-1 has 70 classes
       "MPEG-7 CE-Shape-1 (Latecki, Lakaemper and Eckhardt, 2000)"),
    _d("butterflies", "Butterfly dataset", C, "object", 7, 460, (335, 431), "random",  # [own] 7 species
       "Butterflies (Lazebnik, Schmid and Ponce, BMVC 2004), UIUC Ponce group"),
    _d("mnist", "MNIST", C, "ocr", 10, 51000, (28, 28), "train_test",  # [own] digits; [ref] train/test
       "MNIST (LeCun et al., 1998)"),
    _d("caltech101", "Caltech 101", C, "object", 102, 2601, (244, 301), "train_test",  # [own] 101 + background
       "Caltech 101 (Fei-Fei, Fergus and Perona, 2004)"),  # as in the reference's TFDS caltech101; [ref] split
    _d("umist", "UMIST", C, "face", 20, 686, (217, 199), "random",  # [spec]
       "UMIST face database (Graham and Allinson, 1998)"),
    _d("cmu_amp_expression", "CMU AMP expression", C, "face", 13, 650, (64, 64), "random",  # [spec]
       "CMU AMP face expression database (Carnegie Mellon Advanced Multimedia Processing lab)"),
    _d("pascal_2005", "Pascal 2005", C, "object", 4, 881, (430, 553), "train_test",  # [own] car, motorbike,
       "PASCAL VOC 2005 (Everingham et al., 2005)"),  # bike, person; [ref] train/test; size, res: Appendix M
    _d("caltech_categories", "Caltech cars, motorbikes", C, "object", 2, 996, (341, 514), "random",  # [own] car,
       "Caltech categories: cars and motorbikes (Fergus, Perona and Zisserman, 2003)"),  # motorcycle (ref)
    _d("uiuc_cars", "UIUC cars", C, "object", 2, 823, (50, 112), "auto",  # [spec]
       "UIUC image database for car detection (Agarwal, Awan and Roth, 2004)"),
    _d("aloi", "ALOI", C, "object", 1000, 71494, (144, 192), "random",  # [spec]
       "ALOI, Amsterdam Library of Object Images (Geusebroek, Burghouts and Smeulders, 2005)"),
    _d("scenes8", "8 Scene Dataset", C, "scene", 8, 1828, (256, 256), "random",  # [own] 8 categories; size [est]
       "8 scene categories (Oliva and Torralba, 2001)"),  # 0.68 x 2,688 images of 256x256
    _d("scenes15", "15 Scenes", C, "scene", 15, 3021, (244, 273), "random",  # [own] 15 categories; [size]
       "15 scene categories (Lazebnik, Schmid and Ponce, 2006)"),  # 0.68 x 4,485
    _d("pascal_2006", "Pascal 2006", C, "object", 10, 2211, (420, 524), "train_test",  # [own] VOC2006 has 10
       "PASCAL VOC 2006 (Everingham et al., 2006)"),  # classes; size, res: Appendix M; [size] 0.85 x 2,618
    _d("extended_yaleb", "Extended YaleB", C, "face", 28, 10967, (480, 640), "random",  # [spec]; size [est]
       "Extended Yale Face Database B (Lee, Ho and Kriegman, 2005)"),  # 0.68 x 16,128 images of 640x480
    _d("pascal_2007", "Pascal 2007", M, "object", 20, 2501, (382, 471), "train_val_test",  # [own] 20 VOC classes
       "PASCAL VOC 2007 (Everingham et al., 2010)"),  # [ref] train/val/test
    _d("graz02", "Graz-02", C, "object", 3, 747, (497, 622), "random",  # [spec]; [size] 0.68 x 1,096
       "Graz-02 with INRIA annotations (Opelt et al., 2006; Marszalek and Schmid, 2007)"),
    _d("ppmi", "PPMI", C, "object", 24, 2023, (258, 258), "train_test",  # [own] 12 instruments x play/hold
       "PPMI, People Playing Musical Instruments (Yao and Fei-Fei, 2010)"),  # (ref handler); [ref] train/test
    _d("caltech256", "Caltech 256", C, "object", 257, 20696, (325, 371), "random",  # [own] 256 + clutter (ref)
       "Caltech 256 (Griffin, Holub and Perona, 2007)"),
    _d("imagenet", "ImageNet", C, "object", 1000, 1281167, (406, 473), "imagenet",  # [spec]
       "ImageNet ILSVRC-2012 (Deng et al., 2009; Russakovsky et al., 2015)"),
    _d("lfw", "LFW", C, "face", 423, 11248, (250, 250), "auto",  # [spec]
       "Labeled Faces in the Wild (Huang et al., 2007)"),
    _d("oxford_flowers17", "Oxford Flowers", C, "object", 17, 680, (555, 583), "train_val_test",  # [spec];
       "Oxford 17 Flowers (Nilsback and Zisserman, 2006)"),  # [size] 680 = its official train
    _d("flickr_material", "Flicker Material Dataset", C, "texture", 10, 676, (384, 512), "random",  # [own] 10
       "Flickr Material Database (Sharan, Rosenholtz and Adelson, 2014)"),  # materials; [size] 0.68 x 1,000
    _d("oxford_flowers102", "Oxford Flowers 102", C, "object", 102, 1020, (534, 630), "train_val_test",  # [own]
       "Oxford 102 Flowers (Nilsback and Zisserman, 2008)"),  # 102 species; [ref] train/val/test
    _d("belgium_tsc", "Belgium Traffic Sign Dataset", C, "object", 62, 3887, (118, 105), "train_test",  # [spec]
       "BelgiumTS classification (Timofte, Zimmermann and Van Gool, 2009)"),  # [size] 0.85 x 4,575
    _d("gtsrb", "German Traffic Sign Recognition Benchmark", C, "object", 43, 33392, (50, 50), "train_test",
       "GTSRB (Stallkamp et al., 2012)"),  # [own] 43 classes; [ref] train/test
    _d("vistex", "VisTex", C, "texture", 19, 125, (512, 512), "random",  # [own] 19 reference-texture categories
       "VisTex, Vision Texture database (MIT Media Lab, 1995)"),  # [ref] random split
    _d("umd", "UMD", C, "texture", 25, 676, (960, 1280), "random",  # [spec]
       "UMD high-resolution texture dataset (Xu et al., 2009)"),
    _d("kth_tips", "KTH-TIPS", C, "texture", 10, 554, (196, 200), "random",  # [own] 10 materials
       "KTH-TIPS (Hayman, Caputo, Fritz and Eklundh, 2004)"),
    _d("uiuc_texture", "UIUC texture", C, "texture", 25, 676, (480, 640), "random",  # [own] 25 textures
       "UIUC texture (Lazebnik, Schmid and Ponce, 2005)"),
    _d("kth_tips2b", "KTH-TIPS2-b", C, "texture", 11, 3191, (199, 198), "random",  # [own] 11 materials
       "KTH-TIPS2, sample b (Caputo, Hayman and Mallikarjuna, 2005)"),
    _d("cvc_muscima", "CVC-MUSCIMA", C, "ocr", 50, 419, (1848, 3465), "auto",  # [spec] 50 writers
       "CVC-MUSCIMA, writer identification (Fornes et al., 2012)"),
    _d("iaprtc12", "IAPRTC-12", M, "object", 276, 10830, (395, 439), "random",  # [own] 276 labels, ref handler
       "SAIAPR TC-12 (Escalante et al., 2010) of IAPR TC-12 (Grubinger et al., 2006)"),
    _d("sketch", "sketch dataset", C, "object", 250, 13536, (1111, 1111), "random",  # [spec]
       "TU-Berlin sketches, How do humans sketch objects? (Eitz, Hays and Alexa, 2012)"),
    _d("kth_tips2a", "KTH-TIPS2-a", C, "texture", 11, 3097, (200, 198), "random",  # [own] 11 materials
       "KTH-TIPS2, sample a (Caputo, Hayman and Mallikarjuna, 2005)"),
    _d("pascal_2012", "Pascal 2012", M, "object", 20, 5717, (386, 470), "train_val",  # [own] 20 VOC classes;
       "PASCAL VOC 2012 (Everingham et al., 2015)"),  # multi-label: see the module docstring; [ref] train/val
    _d("norb", "NORB", C, "object", 5, 20655, (96, 96), "smallnorb",  # [own] 5 toy categories (small NORB);
       "small NORB (LeCun, Huang and Bottou, 2004)"),  # [ref] split by object instance (dev 4, dev_test 6)
    _d("wikipaintings", "Wikipaintings", C, "object", 27, 48576, (223, 221), "train_test",  # [own] 27 styles
       "WikiArt styles (Karayev et al., 2014; ArtGAN release, Tan et al., 2019)"),  # (ref); [ref] split
    _d("mit_scenes", "MIT Scenes", C, "scene", 67, 4554, (413, 501), "train_test",  # [own] 67 indoor scenes
       "MIT Indoor 67 (Quattoni and Torralba, 2009)"),  # [size] 0.85 x 5,360
    _d("sun397", "SUN 397", C, "scene", 397, 76128, (291, 353), "train_val_test",  # [own] 397 scenes,
       "SUN397 (Xiao et al., 2010)"),  # multi-class: see the module docstring; [ref] train/val/test
    _d("cifar10", "CIFAR 10", C, "object", 10, 42500, (32, 32), "train_test",  # [own]; [ref] train/test
       "CIFAR-10 (Krizhevsky, 2009)"),
    _d("cub200", "CUB 200", C, "object", 200, 5094, (386, 467), "train_test",  # [own] 200 species; [ref]
       "Caltech-UCSD Birds-200-2011 (Wah et al., 2011)"),
    _d("stanford_cars", "Stanford Cars", C, "object", 196, 6937, (483, 700), "train_test",  # [spec]; [ref]
       "Stanford Cars (Krause et al., 2013)"),
    _d("fgvc_aircraft", "FGVC Aircraft", C, "object", 70, 5683, (747, 1099), "train_test",  # [own] 70 families
       "FGVC-Aircraft, family labels (Maji et al., 2013)"),  # (the reference's label set); [ref] split
    _d("dtd", "DTD", C, "texture", 47, 1880, (451, 496), "train_val_test",  # [own] 47 categories; [ref]
       "Describable Textures Dataset (Cimpoi et al., 2014)"),
    _d("coco", "MS COCO", C, "object", 90, 82783, (130, 127), "train_val",  # [spec]; [size] 82,783 = COCO
       "MS COCO 2014, single-label crops (Lin et al., 2014)"),  # 2014 train (test labels private)
    _d("oxford_pets", "Oxford IIIT Pets", C, "object", 37, 3128, (391, 437), "train_test",  # [own] 37 breeds
       "Oxford-IIIT Pet (Parkhi et al., 2012)"),  # [ref] train/test
    _d("stanford_dogs", "Stanford Dogs", C, "object", 120, 10200, (385, 442), "train_test",  # [own] 120 breeds
       "Stanford Dogs (Khosla et al., 2011)"),  # [ref] train/test
    _d("animal", "ANIMAL", C, "shape", 20, 1346, (474, 581), "random",  # [own] 20 animal shape classes
       "ANIMAL shape dataset (Bai, Liu and Tu, 2009)"),  # [size] 0.67 x 2,000
    _d("caltech101_silhouettes", "Caltech 101 Silhouettes", C, "shape", 101, 4100, (28, 28), "train_val_test",
       "Caltech 101 Silhouettes, 28x28 (Marlin et al., 2010)"),  # [own] 101 classes; [size] 4,100 = its train
    _d("interact", "Interact", C, "object", 60, 2090, (475, 582), "auto",  # [spec]
       "INTERACT abstract scenes (Antol, Zitnick and Parikh, 2014)"),
    _d("voc_actions", "VOC Actions", M, "object", 11, 4234, (226, 150), "auto",  # [spec]
       "PASCAL VOC 2012 action classification (Everingham et al., 2010)"),
    _d("svhn", "SVHN", C, "object", 10, 62268, (32, 32), "train_test",  # [own] digits; [ref] train/test
       "SVHN, cropped digits (Netzer et al., 2011)"),
    _d("chars74k", "Chars74K", C, "ocr", 62, 45740, (158, 168), "auto",  # [spec]
       "Chars74K (de Campos, Babu and Varma, 2009)"),
    _d("celeba", "CelebA", M, "face", 40, 162770, (218, 178), "train_val_test",  # [own] 40 attributes,
       "CelebA (Liu et al., 2015)"),  # multi-label: see the module docstring; [ref] train/val/test
    _d("lfwa", "LFWA", C, "face", 423, 4716, (250, 250), "auto",  # [spec]
       "LFW-a, aligned LFW (Wolf, Hassner and Taigman, 2009)"),
    _d("sun_attribute", "SUN Attribute", M, "scene", 102, 9692, (478, 580), "random",  # [spec]; [size] 0.68 x
       "SUN Attribute (Patterson and Hays, 2012)"),  # 14,340
    _d("cifar100", "CIFAR 100", C, "object", 100, 42500, (32, 32), "train_test",  # [own] fine labels; [ref]
       "CIFAR-100 (Krizhevsky, 2009)"),
    _d("tid2008", "TID2008", C, "quality", 5, 1149, (384, 512), "random",  # [spec]; [size] 0.68 x 1,700
       "TID2008 image quality (Ponomarenko et al., 2009)"),
    _d("tid2013", "TID2013", C, "quality", 5, 1973, (384, 512), "random",  # [spec]; [size] 0.66 x 3,000
       "TID2013 image quality (Ponomarenko et al., 2015)"),
    _d("usps", "USPS", C, "ocr", 10, 6207, (16, 16), "train_test",  # [spec]; [size] 0.85 x 7,291
       "USPS handwritten digits (Hull, 1994)"),
    _d("semeion", "Semeion", C, "ocr", 10, 1074, (16, 16), "random",  # [spec]; [size] 0.67 x 1,593
       "Semeion handwritten digits, UCI repository (Buscema, 1998)"),
    _d("mnist_m", "MNIST-m", C, "ocr", 10, 46111, (32, 32), "auto",  # [spec]
       "MNIST-M (Ganin and Lempitsky, 2015)"),
    _d("office_caltech", "Office Caltech", C, "object", 10, 1410, (360, 373), "auto",  # [own] 10 shared classes
       "Office-Caltech 10 (Gong et al., 2012)"),
    _d("pacs", "PACS", C, "object", 7, 6062, (227, 227), "auto",  # [own] 7 classes
       "PACS (Li et al., 2017)"),
    _d("caltech_camera_traps", "Caltech Camera Traps", C, "object", 16, 13553, (748, 1024), "auto",  # [spec]
       "Caltech Camera Traps, CCT-20 (Beery, Van Horn and Perona, 2018)"),
    _d("emnist_balanced", "EMNIST Balanced", C, "ocr", 47, 95880, (28, 28), "train_test",  # [own] 47; [ref]
       "EMNIST Balanced (Cohen et al., 2017)"),
    _d("casia_hwdb", "CASIA-HWDB1.1", C, "ocr", 3926, 797600, (81, 70), "auto",  # [spec]
       "CASIA-HWDB1.1 offline handwritten Chinese characters (Liu et al., 2011)"),
    _d("isic2017", "ISBI-ISIC 2017 melanoma classification challenge", C, "medical", 3, 2000, (2228, 3281),
       "train_val_test", "ISIC 2017 skin lesion challenge (Codella et al., 2018)"),  # [spec]; [size] = its train
    _d("trancos", "Trancos", C, "counting", 10, 403, (480, 640), "train_val_test",  # [spec]; [size] = its train
       "TRANCOS vehicle counting (Guerrero-Gomez-Olmedo et al., 2015)"),
    _d("mall", "Mall dataset", C, "counting", 10, 680, (480, 640), "train_test",  # [spec]; [size] 0.85 x the
       "Mall crowd counting (Chen et al., 2012)"),  # 800 training frames
    _d("fashion_mnist", "Fashion MNIST", C, "object", 10, 51000, (28, 28), "train_test",  # [own]; [ref]
       "Fashion-MNIST (Xiao, Rasul and Vollgraf, 2017)"),
    _d("notmnist", "NotMNIST", C, "ocr", 10, 12345, (28, 28), "random",  # [own] letters A-J; [size] 0.66 x
       "notMNIST (Bulatov, 2011)"),  # 18,724 (notMNIST_small)
    _d("tiny_imagenet", "Tiny Imagenet", C, "object", 200, 85099, (64, 64), "train_test",  # [spec]; [ref]
       "Tiny ImageNet (Le and Yang, 2015)"),  # train/test with the official val as test
    _d("stl10", "STL10", C, "object", 10, 4250, (96, 96), "train_test",  # [own] 10 classes; [ref]
       "STL-10 (Coates, Ng and Lee, 2011)"),
    _d("food101", "Food 101", C, "object", 101, 75750, (475, 495), "train_test",  # [spec]; [ref]
       "Food-101 (Bossard, Guillaumin and Van Gool, 2014)"),
    _d("mnist_rot", "MNIST-rot", C, "ocr", 10, 51104, (28, 28), "auto",  # [spec]
       "MNIST-rot (Larochelle et al., 2007)"),
    _d("awa2", "AWA2", M, "object", 85, 25827, (192, 245), "random",  # [spec] 85 attributes; [size] 0.69 x
       "Animals with Attributes 2 (Xian et al., 2018)"),  # 37,322
    _d("food101n", "Food 101 N", C, "object", 101, 45032, (361, 394), "train_test",  # [spec]; [ref]
       "Food-101N (Lee et al., 2018)"),  # verified train / verified val as test
    _d("shanghaitech", "ShanghaiTech", C, "counting", 10, 595, (696, 961), "train_test",  # [spec]; [size]
       "ShanghaiTech crowd counting (Zhang et al., 2016)"),  # 0.85 x 700 training images
    _d("animalweb", "AnimalWeb", C, "object", 352, 12909, (1154, 1461), "random",  # [own] the reference handler
       "AnimalWeb (Khan et al., 2020)"),  # lists 352 species names (the paper: 350); [ref] random split
    _d("biwi", "BIWI", M, "face", 15, 11325, (480, 640), "auto",  # [spec] 5 bins x 3 angles
       "BIWI Kinect head pose (Fanelli et al., 2013)"),
    _d("domainnet", "DomainNet-Real", C, "object", 345, 102770, (467, 472), "domainnet",  # [spec]; the table's
       "DomainNet (Peng et al., 2019)"),  # size is 0.85 x the real domain's train, kept as given
    _d("pneumonia_xray", "Pneumonia Chest X-ray", C, "xray", 2, 5216, (970, 1327), "train_val_test",  # [spec]
       "Chest X-ray pneumonia (Kermany et al., 2018)"),  # [size] 5,216 = its train
    _d("path_mnist", "Path MNIST", C, "medical", 8, 3356, (28, 28), "random",  # [spec]; [size] 0.68 x 5,000
       "Colorectal cancer histology textures (Kather et al., 2016)"),
    _d("nih_xray", "NIH Chest X-ray", M, "xray", 15, 73638, (1024, 1024), "train_test",  # [own] 14 findings +
       "NIH ChestX-ray14 (Wang et al., 2017)"),  # "No Finding" (ref handler); [ref] train/test
    _d("tuberculosis", "Tubercolosis", C, "xray", 2, 2809, (512, 512), "random",  # [own] normal / TB
       "Tuberculosis chest X-ray database (Rahman et al., 2020)"),  # [size] 0.67 x 4,200
    _d("covid19_xray", "covid-19 x-ray", C, "xray", 4, 14281, (299, 299), "random",  # [spec]
       "COVID-19 radiography database (Chowdhury et al., 2020; Rahman et al., 2021)"),
    _d("patch_camelyon", "PatchCamelyon", C, "medical", 2, 262144, (96, 96), "train_val_test",  # [own] 2; [ref]
       "PatchCamelyon (Veeling et al., 2018)"),
    _d("ddsm", "DDSM", C, "xray", 3, 2089, (4500, 3000), "train_test",  # [own] benign / malignant / benign
       "CBIS-DDSM mammography (Lee et al., 2017) of DDSM (Heath et al., 2000)"),  # without callback (ref);
    # size, resolution [est]: 0.85 x ~2,458 training mammograms; domain xray as in the reference handler
    _d("synthetic_covid19_xray", "Synthetic COVID-19 Chest X-ray Dataset", C, "xray", 2, 14410, (256, 256),
       "random", "Synthetic COVID-19 chest X-rays (Zunair and Hamza, 2021)"),  # [own] normal / pneumonia (ref)
)
# fmt: on
DATASETS: Mapping[str, NevisDataset] = {d.name: d for d in _DATASETS}

FULL_BY_YEAR: Mapping[int, tuple[str, ...]] = {
    1992: ("magellan_venus_volcanoes", "aberdeen"),
    1998: ("landsat", "brodatz", "olivetti"),
    2000: ("coil20",),
    2001: ("coil100", "mpeg7"),
    2004: ("butterflies", "mnist"),
    2005: ("caltech101", "umist", "cmu_amp_expression"),
    2006: ("pascal_2005", "caltech_categories", "uiuc_cars", "aloi"),
    2007: ("scenes8",),
    2008: ("scenes15",),
    2009: ("pascal_2006", "extended_yaleb"),
    2010: ("pascal_2007", "graz02", "olivetti", "ppmi"),
    2011: (
        "caltech256",
        "imagenet",
        "lfw",
        "oxford_flowers17",
        "flickr_material",
        "oxford_flowers102",
        "belgium_tsc",
        "gtsrb",
        "brodatz",
        "vistex",
    ),
    2012: ("umd", "kth_tips", "uiuc_texture", "kth_tips2b", "cvc_muscima"),
    2013: ("iaprtc12", "sketch", "kth_tips2a", "pascal_2012", "norb"),
    2014: ("wikipaintings",),
    2015: ("mnist", "mit_scenes", "sun397", "cifar10"),
    2016: (
        "cub200",
        "stanford_cars",
        "fgvc_aircraft",
        "dtd",
        "coco",
        "caltech101",
        "oxford_pets",
        "stanford_dogs",
        "animal",
        "caltech101_silhouettes",
        "interact",
        "voc_actions",
        "svhn",
        "chars74k",
    ),
    2017: ("celeba", "lfwa", "sun_attribute", "cifar100"),
    2018: (
        "tid2008",
        "tid2013",
        "usps",
        "semeion",
        "mnist_m",
        "office_caltech",
        "pacs",
        "caltech_camera_traps",
        "emnist_balanced",
        "casia_hwdb",
        "isic2017",
    ),
    # ---- meta-test ----
    2019: (
        "trancos",
        "mall",
        "fashion_mnist",
        "notmnist",
        "tiny_imagenet",
        "stl10",
        "food101",
        "mnist_rot",
        "awa2",
        "scenes15",
        "food101n",
        "coil20",
        "coil100",
    ),
    2020: ("shanghaitech", "animalweb", "biwi"),
    2021: (
        "imagenet",
        "oxford_flowers102",
        "domainnet",
        "pneumonia_xray",
        "path_mnist",
        "nih_xray",
        "tuberculosis",
        "covid19_xray",
        "patch_camelyon",
        "ddsm",
        "synthetic_covid19_xray",
    ),
}

# SHORT and TINY have their own years, not FULL's (docs/protocols/nevis.md#the-stream-and-its-variants, paper
# Appendix M).
SHORT_BY_YEAR: Mapping[int, tuple[str, ...]] = {
    2004: ("coil100", "mnist"),
    2006: ("pascal_2005", "caltech_categories", "uiuc_cars"),
    2009: ("pascal_2006",),
    2010: ("caltech101",),
    2011: ("graz02", "scenes15", "pascal_2007", "lfw"),
    2013: ("sketch", "brodatz"),
    2014: ("imagenet", "pascal_2012", "caltech256"),
    2018: ("cifar100", "cifar10", "usps", "mnist", "mnist_m", "office_caltech", "pacs", "isic2017"),
    2019: ("fashion_mnist",),
    2020: ("stanford_dogs", "cub200", "stanford_cars", "fgvc_aircraft"),
}
TINY_BY_YEAR: Mapping[int, tuple[str, ...]] = {
    2004: ("mnist",),
    2010: ("caltech101",),
    2014: ("pascal_2012",),
    2018: ("cifar100", "mnist", "isic2017"),
    2020: ("cub200",),
}


# The meta-test part (2019-2021) of MAJOR_DOMAIN_ONLY and LARGE_DATASET_ONLY is FULL's, unchanged.
_FULL_META_TEST = {year: names for year, names in FULL_BY_YEAR.items() if year >= META_TEST_FROM_YEAR}
MAJOR_DOMAIN_BY_YEAR: Mapping[int, tuple[str, ...]] = {  # object and scene tasks only before 2019
    2000: ("coil20",),
    2001: ("coil100",),
    2004: ("butterflies",),
    2005: ("caltech101",),
    2006: ("pascal_2005", "caltech_categories", "uiuc_cars", "aloi"),
    2007: ("scenes8",),
    2008: ("scenes15",),
    2009: ("pascal_2006",),
    2010: ("pascal_2007", "graz02", "ppmi"),
    2011: ("caltech256", "imagenet", "oxford_flowers17", "oxford_flowers102", "belgium_tsc", "gtsrb"),
    2013: ("iaprtc12", "sketch", "pascal_2012", "norb"),
    2014: ("wikipaintings",),
    2015: ("mit_scenes", "sun397", "cifar10"),
    2016: (
        "cub200",
        "stanford_cars",
        "fgvc_aircraft",
        "coco",
        "caltech101",
        "oxford_pets",
        "stanford_dogs",
        "interact",
        "voc_actions",
        "svhn",
    ),
    2017: ("sun_attribute", "cifar100"),
    2018: ("office_caltech", "pacs", "caltech_camera_traps"),
    **_FULL_META_TEST,
}
LARGE_DATASET_BY_YEAR: Mapping[int, tuple[str, ...]] = {  # 10,000 samples or more (reference's count) before 2019
    2004: ("mnist",),
    2005: ("caltech101",),
    2006: ("aloi",),
    2009: ("extended_yaleb",),
    2010: ("pascal_2007",),
    2011: ("caltech256", "imagenet", "lfw", "belgium_tsc", "gtsrb"),
    2013: ("iaprtc12", "sketch", "pascal_2012", "norb"),
    2014: ("wikipaintings",),
    2015: ("mnist", "mit_scenes", "sun397", "cifar10"),
    2016: (
        "cub200",
        "stanford_cars",
        "fgvc_aircraft",
        "coco",
        "caltech101",
        "oxford_pets",
        "stanford_dogs",
        "caltech101_silhouettes",
        "voc_actions",
        "svhn",
        "chars74k",
    ),
    2017: ("celeba", "lfwa", "sun_attribute", "cifar100"),
    2018: ("usps", "mnist_m", "pacs", "caltech_camera_traps", "emnist_balanced", "casia_hwdb"),
    **_FULL_META_TEST,
}
IMAGENET_ONLY_BY_YEAR: Mapping[int, tuple[str, ...]] = {2014: ("imagenet",)}
DEBUG_BY_YEAR: Mapping[int, tuple[str, ...]] = {1999: ("pascal_2007",), 2000: ("coil20",)}


def tasks_by_year(by_year: Mapping[int, Sequence[str]]) -> tuple[NevisTask, ...]:
    """Stream rows from a year -> dataset names mapping, years ascending, names in their listed order."""
    unknown = sorted({name for names in by_year.values() for name in names} - set(DATASETS))
    if unknown:
        raise ValueError(f"unknown Nevis dataset(s) {unknown}; known: {sorted(DATASETS)}")
    return tuple(
        NevisTask(**dataclasses.asdict(DATASETS[name]), year=year) for year in sorted(by_year) for name in by_year[year]
    )


FULL_TASKS = tasks_by_year(FULL_BY_YEAR)
SHORT_TASKS = tasks_by_year(SHORT_BY_YEAR)
TINY_TASKS = tasks_by_year(TINY_BY_YEAR)
MAJOR_DOMAIN_TASKS = tasks_by_year(MAJOR_DOMAIN_BY_YEAR)
LARGE_DATASET_TASKS = tasks_by_year(LARGE_DATASET_BY_YEAR)
IMAGENET_ONLY_TASKS = tasks_by_year(IMAGENET_ONLY_BY_YEAR)
DEBUG_TASKS = tasks_by_year(DEBUG_BY_YEAR)
