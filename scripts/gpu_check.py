#!/usr/bin/env python3
"""The Python half of scripts/gpu-check.sh (standard library only, except `torch`, which needs
PyTorch).

  gpu_check.py wheel-dirs
      The nvidia/* package folders of NVIDIA's CUDA wheels (cuBLAS, cuDNN, NCCL, ...) that this
      Python sees, one a line: each has include/ and lib/ (a bare GPU machine has them only there).
  gpu_check.py torch --model M --models LISTING --device cuda|cpu [--optimizer adam] -o OUT.json
      Times a training step (forward, backward, optimizer step) of the same decoder in eager
      PyTorch: the shape is read from the zoo's line in LISTING (the output of `unity models`).
  gpu_check.py report --run RUN.json [--profile PROFILE.json] [--torch TORCH.json]
                      [--optimize OPT.json] [--gpu NAME] [--not-run WHY] -o OUT.json
      Prints a model's measured iteration and operator times against the plan's predictions, the
      --check difference and PyTorch's step times, and writes them together to OUT.json (a model
      the executor could not train: its prediction and PyTorch's time, and why).
  gpu_check.py summary OUT.json...
      One line per model: the table the script ends with.
"""
import argparse
import json
import math
import os
import re
import site
import statistics
import sys
import time


def wheel_dirs():
    roots = []
    for r in list(site.getsitepackages()) + [site.getusersitepackages()] + sys.path:
        if r and os.path.isdir(os.path.join(r, "nvidia")) and r not in roots:
            roots.append(r)
    for r in roots:
        base = os.path.join(r, "nvidia")
        for sub in sorted(os.listdir(base)):
            path = os.path.join(base, sub)
            if os.path.isdir(os.path.join(path, "include")) or os.path.isdir(os.path.join(path, "lib")):
                print(path)


# ---- the PyTorch step --------------------------------------------------------------------------

def zoo_shape(model, listing):
    """The decoder's sizes from its `unity models` line, e.g. "... 2 layers, hidden 64, 4 heads (2
    key/value), ffn 176, sequence 32, vocabulary 256, bfloat16; batch 4 per device"."""
    with open(listing) as f:
        line = next((l for l in f if l.split() and l.split()[0] == model), None)
    if line is None:
        sys.exit(f"gpu_check.py: {model} is not in {listing}")
    number = lambda pattern: int(re.search(pattern, line).group(1))
    heads = number(r"(\d+) heads")
    kv = re.search(r"heads \((\d+) key/value\)", line)
    return {
        "family": "llama" if "Llama" in line else "gpt",
        "layers": number(r"(\d+) layers"),
        "hidden": number(r"hidden (\d+)"),
        "heads": heads,
        "kv_heads": int(kv.group(1)) if kv else heads,
        "ffn": number(r"ffn (\d+)"),
        "seq": number(r"sequence (\d+)"),
        "vocab": number(r"vocabulary (\d+)"),
        "batch": number(r"batch (\d+) per device"),
    }


def build_model(torch, s):
    """The zoo's decoder (core/src/zoo/gpt.cpp, llama.cpp) in torch.nn: gpt has learned positions,
    LayerNorm, biased projections and a GELU MLP; llama has rotary positions, RMSNorm, grouped-query
    attention and a SwiGLU feed-forward. Both pre-norm, causal, with an untied head."""
    nn, F = torch.nn, torch.nn.functional
    llama = s["family"] == "llama"
    hd = s["hidden"] // s["heads"]

    class RMSNorm(nn.Module):  # torch.nn.RMSNorm is recent (2.4)
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight

    norm = (lambda: RMSNorm(s["hidden"])) if llama else (lambda: nn.LayerNorm(s["hidden"]))

    def rotate(x, cos, sin):
        a, b = x[..., : hd // 2], x[..., hd // 2:]
        return x * cos + torch.cat((-b, a), dim=-1) * sin

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            bias = not llama
            self.q = nn.Linear(s["hidden"], s["heads"] * hd, bias=bias)
            self.k = nn.Linear(s["hidden"], s["kv_heads"] * hd, bias=bias)
            self.v = nn.Linear(s["hidden"], s["kv_heads"] * hd, bias=bias)
            self.o = nn.Linear(s["heads"] * hd, s["hidden"], bias=bias)

        def forward(self, x, rope):
            b, t, _ = x.shape
            q = self.q(x).view(b, t, s["heads"], hd).transpose(1, 2)
            k = self.k(x).view(b, t, s["kv_heads"], hd).transpose(1, 2)
            v = self.v(x).view(b, t, s["kv_heads"], hd).transpose(1, 2)
            if rope is not None:
                q, k = rotate(q, *rope), rotate(k, *rope)
            if s["kv_heads"] != s["heads"]:
                k = k.repeat_interleave(s["heads"] // s["kv_heads"], dim=1)
                v = v.repeat_interleave(s["heads"] // s["kv_heads"], dim=1)
            if hasattr(F, "scaled_dot_product_attention"):  # PyTorch 2: the fused kernels
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                scores = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
                mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
                y = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
            return self.o(y.transpose(1, 2).reshape(b, t, s["heads"] * hd))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.attention, self.norm2 = norm(), Attention(), norm()
            if llama:
                self.gate = nn.Linear(s["hidden"], s["ffn"], bias=False)
                self.up = nn.Linear(s["hidden"], s["ffn"], bias=False)
                self.down = nn.Linear(s["ffn"], s["hidden"], bias=False)
            else:
                self.fc1 = nn.Linear(s["hidden"], s["ffn"])
                self.fc2 = nn.Linear(s["ffn"], s["hidden"])

        def forward(self, x, rope):
            x = x + self.attention(self.norm1(x), rope)
            h = self.norm2(x)
            h = self.down(F.silu(self.gate(h)) * self.up(h)) if llama else self.fc2(F.gelu(self.fc1(h)))
            return x + h

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(s["vocab"], s["hidden"])
            self.position = None if llama else nn.Embedding(s["seq"], s["hidden"])
            self.blocks = nn.ModuleList(Block() for _ in range(s["layers"]))
            self.norm = norm()
            self.head = nn.Linear(s["hidden"], s["vocab"], bias=False)
            if llama:
                inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
                angles = torch.outer(torch.arange(s["seq"]).float(), inv)
                angles = torch.cat((angles, angles), dim=-1)
                self.register_buffer("cos", angles.cos(), persistent=False)
                self.register_buffer("sin", angles.sin(), persistent=False)

        def forward(self, ids):
            x = self.embed(ids)
            if self.position is not None:
                x = x + self.position(torch.arange(ids.shape[1], device=ids.device))
            rope = (self.cos.to(x.dtype), self.sin.to(x.dtype)) if llama else None
            for block in self.blocks:
                x = block(x, rope)
            return self.head(self.norm(x))

    return Decoder()


def time_torch(args):
    try:
        import torch
    except ImportError as error:
        print(f"gpu_check.py: PyTorch is not available ({error}): no PyTorch comparison", file=sys.stderr)
        return 77
    s = zoo_shape(args.model, args.models)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("gpu_check.py: PyTorch sees no GPU: no PyTorch comparison", file=sys.stderr)
        return 77
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    out = {"model": args.model, "shape": s, "torch": torch.__version__, "device": str(device),
           "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
           "optimizer": args.optimizer, "steps": args.steps, "warmup": args.warmup, "results": {}}
    # bf16 as PyTorch's users train in it (autocast: fp32 weights and optimizer, bf16 matrix
    # products), and fp32, which is what Unity's executor computes in (its run JSON's compute_dtype).
    for label, autocast in (("bfloat16_autocast", torch.bfloat16), ("float32", None)):
        torch.manual_seed(1)
        model = build_model(torch, s).to(device)
        if args.optimizer == "adam":
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        else:
            opt = torch.optim.SGD(model.parameters(), lr=0.01,
                                  momentum=0.9 if args.optimizer == "sgd-momentum" else 0.0)
        ids = torch.randint(0, s["vocab"], (s["batch"], s["seq"]), device=device)
        labels = torch.randint(0, s["vocab"], (s["batch"], s["seq"]), device=device)

        def step():
            if autocast is not None:
                with torch.autocast(device_type=device.type, dtype=autocast):
                    logits = model(ids)
            else:
                logits = model(ids)
            loss = torch.nn.functional.cross_entropy(logits.float().view(-1, s["vocab"]), labels.view(-1))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss

        try:
            for _ in range(args.warmup):
                step()
            sync()
            times = []
            for _ in range(args.steps):
                start = time.perf_counter()
                step()
                sync()
                times.append((time.perf_counter() - start) * 1e3)
            out["results"][label] = {"median_ms": statistics.median(times), "min_ms": min(times)}
        except RuntimeError as error:  # e.g. an old PyTorch without bf16 autocast on this device
            out["results"][label] = {"error": str(error).splitlines()[0]}
    out["parameters"] = sum(p.numel() for p in model.parameters())
    with open(args.output, "w") as f:
        json.dump(out, f, indent=1)
    return 0


def time_host(args):
    """How fast the host launches kernels: what decides whether a layer of many small kernels (an MoE
    layer's router, dispatch and one GEMM an expert) runs at the GPU's pace or the CPU's. Measured
    as eager PyTorch launches them, since the frameworks Unity exports to run that way."""
    try:
        import torch
    except ImportError as error:
        print(f"gpu_check.py: PyTorch is not available ({error}): no host measurement", file=sys.stderr)
        return 77
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("gpu_check.py: PyTorch sees no GPU: no host measurement", file=sys.stderr)
        return 77
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    out = {"torch": torch.__version__, "device": str(device),
           "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"}

    def per_call_us(body, calls):
        body()  # warm up: the kernels' first launch loads them
        sync()
        start = time.perf_counter()
        for _ in range(calls):
            body()
        queued = time.perf_counter() - start  # the host's time: the launches are asynchronous
        sync()
        done = time.perf_counter() - start  # the host's and the GPU's, whichever is longer
        return 1e6 * queued / calls, 1e6 * done / calls

    calls = args.calls
    # bf16 as the frameworks train; on a CPU (the check's rehearsal) fp32, which it runs fast.
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    x = torch.zeros(1024, device=device)
    a = torch.randn(64, 64, device=device, dtype=dtype)
    out["elementwise_us"] = dict(zip(("host", "total"), per_call_us(lambda: x.add_(1.0), calls)))
    out["small_gemm_us"] = dict(zip(("host", "total"), per_call_us(lambda: torch.mm(a, a), calls)))
    # One GEMM an expert, as Transformer Engine's grouped linear runs bf16 experts: Qwen3-235B's up
    # and gate projection (hidden 4,096 -> 2 x 1,536) for 16 experts of 1,024 tokens, against the
    # same products as one GEMM of 16,384 rows.
    experts, rows, hidden, ffn = 16, args.expert_rows, 4096, 3072
    tokens = torch.randn(experts, rows, hidden, device=device, dtype=dtype)
    weights = torch.randn(experts, hidden, ffn, device=device, dtype=dtype)
    flat = tokens.view(experts * rows, hidden)

    def per_expert():
        for e in range(experts):
            torch.mm(tokens[e], weights[e])

    loop = per_call_us(per_expert, max(1, calls // 100))
    one = per_call_us(lambda: torch.mm(flat, weights[0]), max(1, calls // 100))
    flops = 2.0 * experts * rows * hidden * ffn
    out["expert_gemms"] = {"experts": experts, "rows": rows, "hidden": hidden, "ffn": ffn,
                           "per_expert_us": {"host": loop[0], "total": loop[1]},
                           "one_gemm_us": {"host": one[0], "total": one[1]},
                           "per_expert_tflops": flops / loop[1] / 1e6,
                           "one_gemm_tflops": flops / one[1] / 1e6}
    with open(args.output, "w") as f:
        json.dump(out, f, indent=1)
    e = out["expert_gemms"]
    print(f"host launches on {out['device_name']} (PyTorch {out['torch']}): an element-wise kernel "
          f"{out['elementwise_us']['host']:.1f} us of host time ({out['elementwise_us']['total']:.1f} us "
          f"each with the GPU's), a 64x64 GEMM {out['small_gemm_us']['host']:.1f} us "
          f"({out['small_gemm_us']['total']:.1f}); {experts} expert GEMMs of {rows} rows one at a "
          f"time {e['per_expert_us']['total']:.0f} us ({e['per_expert_tflops']:.3g} TFLOP/s), as one "
          f"GEMM {e['one_gemm_us']['total']:.0f} us ({e['one_gemm_tflops']:.3g} TFLOP/s)")
    return 0


# ---- the report ----------------------------------------------------------------------------------

def load(path):
    if not path or not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    with open(path) as f:
        return json.load(f)


def ratio(measured, predicted):
    return f"{measured / predicted:.2f}x" if predicted and predicted > 0 else "-"


def report(args):
    run, prof, torch_, opt = load(args.run), load(args.profile), load(args.torch), load(args.optimize)
    if run is None and opt is None:
        sys.exit(f"gpu_check.py: no run result in {args.run} and no plan in {args.optimize}")
    if run is not None:
        m, p = run["measured_iteration_ms"], run["predicted_iteration_ms"]
        print(f"{run['model']} ({run['mode']} plan for {run['machine']}, {run['plan_dtype']}) on "
              f"{run['ranks']} {run['backend']} rank{'s' if run['ranks'] != 1 else ''}"
              f"{' (' + args.gpu + ')' if args.gpu else ''}; the executor computes in {run['compute_dtype']}")
        print(f"  iteration   {m:9.3f} ms measured (median of {run['iterations']}), {p:9.3f} ms predicted,"
              f" measured/predicted {ratio(m, p)}")
    else:
        print(f"{opt['model']} ({opt['mode']} plan for {opt['machine']}, {opt['dtype']}): not run")
        print(f"  iteration   not measured: {args.not_run or 'the run failed'}; "
              f"{opt['iteration_time_ms']:.3f} ms predicted")
    if run is not None and "max_abs_diff" in run:
        print(f"  --check     max |diff| {run['max_abs_diff']:.3g} against the one-rank CPU reference "
              f"(losses {run['max_abs_diff_losses']:.3g}, weights {run['max_abs_diff_weights']:.3g}, "
              f"relative {run['max_rel_diff']:.3g}); loss {run['losses'][0]:.4f} -> {run['losses'][-1]:.4f}")
    if torch_:
        r = torch_["results"]
        cell = lambda k: (f"{r[k]['median_ms']:.3f} ms" if "median_ms" in r.get(k, {})
                          else r.get(k, {}).get("error", "-"))
        print(f"  PyTorch     {cell('bfloat16_autocast')} bf16 autocast, {cell('float32')} fp32 (eager "
              f"{torch_['torch']}, {torch_['optimizer']}, median of {torch_['steps']} steps on "
              f"{torch_['device_name']})")
    else:
        print("  PyTorch     not measured (no PyTorch, or it sees no GPU)")
    rows = (prof or {}).get("profile", [])
    if rows:
        print(f"  per operator (a --profile run of {prof['iterations']} iterations; ms per iteration):")
        print(f"    {'operator':<28} {'type':<20} {'fwd':>8} {'bwd':>8} {'total':>8} {'predicted':>9} {'ratio':>7}")
        for row in rows:
            total = row["forward_ms"] + row["backward_ms"]
            pred = row.get("predicted_ms")
            print(f"    {row['name'][:28]:<28} {row['op'][:20]:<20} {row['forward_ms']:8.3f} "
                  f"{row['backward_ms']:8.3f} {total:8.3f} "
                  f"{(f'{pred:.3f}' if pred is not None else '-'):>9} {ratio(total, pred):>7}")
        measured_sum = sum(r["forward_ms"] + r["backward_ms"] for r in rows)
        predicted_sum = sum(r.get("predicted_ms") or 0 for r in rows)
        print(f"    {'sum of operators':<49} {measured_sum:26.3f} {predicted_sum:9.3f} "
              f"{ratio(measured_sum, predicted_sum):>7}")
    result = {"model": (run or opt)["model"], "gpu": args.gpu, "run": run, "not_run": args.not_run,
              "profile": rows, "torch": torch_,
              "optimize": {k: opt[k] for k in ("model", "iteration_time_ms", "compute_ms", "communication_ms",
                                                 "dtype", "machine", "devices", "optimizer",
                                                 "cost_sources") if k in opt} if opt else None}
    with open(args.output, "w") as f:
        json.dump(result, f, indent=1)
    return 0


def summary(args):
    print(f"  {'model':<12} {'measured ms':>11} {'predicted ms':>12} {'ratio':>7} {'check |diff|':>12} "
          f"{'PyTorch bf16 ms':>15} {'PyTorch fp32 ms':>15}")
    for path in args.files:
        r = load(path)
        if not r:
            continue
        run, t = r.get("run"), (r.get("torch") or {}).get("results", {})
        cell = lambda k: f"{t[k]['median_ms']:.3f}" if "median_ms" in t.get(k, {}) else "-"
        if run:
            measured, predicted = run["measured_iteration_ms"], run["predicted_iteration_ms"]
            diff = f"{run['max_abs_diff']:.3g}" if "max_abs_diff" in run else "-"
            cells = f"{measured:11.3f} {predicted:12.3f} {ratio(measured, predicted):>7} {diff:>12}"
        else:
            cells = f"{'not run':>11} {r['optimize']['iteration_time_ms']:12.3f} {'-':>7} {'-':>12}"
        print(f"  {r['model']:<12} {cells} {cell('bfloat16_autocast'):>15} {cell('float32'):>15}")
        if not run and r.get("not_run"):
            print(f"  {'':<12} not run: {r['not_run']}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("wheel-dirs")
    t = sub.add_parser("torch")
    t.add_argument("--model", required=True)
    t.add_argument("--models", required=True, help="the output of `unity models`")
    t.add_argument("--device", default="cuda")
    t.add_argument("--optimizer", default="adam", choices=["adam", "sgd", "sgd-momentum"])
    t.add_argument("--steps", type=int, default=50)
    t.add_argument("--warmup", type=int, default=10)
    t.add_argument("-o", "--output", required=True)
    h = sub.add_parser("host")
    h.add_argument("--device", default="cuda")
    h.add_argument("--calls", type=int, default=2000)
    h.add_argument("--expert-rows", type=int, default=1024)
    h.add_argument("-o", "--output", required=True)
    r = sub.add_parser("report")
    r.add_argument("--run", required=True)
    r.add_argument("--profile")
    r.add_argument("--torch")
    r.add_argument("--optimize")
    r.add_argument("--gpu", default="")
    r.add_argument("--not-run", default="", help="why the model was not trained")
    r.add_argument("-o", "--output", required=True)
    s = sub.add_parser("summary")
    s.add_argument("files", nargs="*")
    args = parser.parse_args()
    if args.command == "wheel-dirs":
        wheel_dirs()
        return 0
    return {"torch": time_torch, "host": time_host, "report": report,
            "summary": summary}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
