#!/usr/bin/python3
"""Run the model zoo on each big chip config and print the table of docs/models.md.

    /usr/bin/python3 scripts/model_table.py [BUILD_DIR] [--only MODEL,...] [--configs CFG,...] [--host-gib N]

For each model and config it runs `tessera run -q -f json` under /usr/bin/time and prints one
Markdown row: simulated cycles, simulated time, images (or sequences, or rays) per second, energy,
and the host's wall time and peak resident memory for the whole process. A model a chip refuses gets
the first line of the refusal instead. Host figures are whole-process figures on the machine the
script ran on; they vary with the load of that machine. A run may take N GiB of address space
(12 by default); one that needs more stops with the lowering's out-of-memory message.
"""
import json
import os
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
BUILD = ARGS[0] if ARGS else os.path.join(ROOT, "build-rel")
TESSERA = os.path.join(BUILD, "cli", "tessera")

# model file, what it is, items per run, what an item is
MODELS = [
    ("resnet18.onnx", "ResNet-18", 1, "images"),
    ("resnet50.onnx", "ResNet-50", 1, "images"),
    ("resnet50_b8.onnx", "ResNet-50, batch 8", 8, "images"),
    ("mobilenetv2.onnx", "MobileNetV2", 1, "images"),
    ("vit_b16_op13.onnx", "ViT-B/16", 1, "images"),
    ("bert_encoder.onnx", "BERT-base encoder, seq 128", 1, "sequences"),
    ("bert_encoder_b4.onnx", "BERT-base encoder, seq 128, batch 4", 4, "sequences"),
    ("nerf_mlp.onnx", "NeRF MLP, 4,096 rays", 4096, "rays"),
]
CONFIGS = ["ipu_mk2", "tsp_v1", "wse2"]
HOST_LIMIT = 12 << 30  # bytes of address space a run may take (--host-gib N); past it, the row says so


def limit():
    resource.setrlimit(resource.RLIMIT_AS, (HOST_LIMIT, HOST_LIMIT))


def opt(name):
    for i, a in enumerate(sys.argv):
        if a == name and i + 1 < len(sys.argv):
            return sys.argv[i + 1].split(",")
    return None


def run(model, cfg):
    with tempfile.TemporaryDirectory() as tmp:
        rep, tim = os.path.join(tmp, "r.json"), os.path.join(tmp, "time")
        cmd = ["/usr/bin/time", "-o", tim, "-f", "%e %M", TESSERA, "run", "-q", "-c", cfg,
               os.path.join(ROOT, "tests", "data", "models", model), "-f", "json", "-o", rep]
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, preexec_fn=limit)
        wall, rss = open(tim).read().split()[-2:]
        if p.returncode != 0:
            msg = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
            return None, msg.replace("tessera: ", "").replace("|", "/"), float(wall), int(rss)
        return json.load(open(rep)), None, float(wall), int(rss)


def main():
    global HOST_LIMIT
    only, cfgs = opt("--only"), opt("--configs") or CONFIGS
    if opt("--host-gib"):
        HOST_LIMIT = int(opt("--host-gib")[0]) << 30
    print("| model | chip | cycles | time | per second | energy | host time | host memory |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for model, what, items, unit in MODELS:
        if only and model.split(".")[0] not in only:
            continue
        for cfg in cfgs:
            rep, err, wall, rss = run(model, cfg)
            if err:
                print("| %s | %s | %s |  |  |  | %.1f s | %d MB |" % (what, cfg, err, wall, rss // 1024))
                continue
            t = rep["time_s"]
            print("| %s | %s | %d | %.3f ms | %.0f %s | %.3f J | %.1f s | %d MB |" %
                  (what, cfg, rep["cycles"], t * 1e3, items / t, unit, rep["energy"]["total_j"], wall,
                   rss // 1024), flush=True)


if __name__ == "__main__":
    main()
