# Host-side numerics study (session 40): the error of session 32's "LN statistics off the path by linearity" plan
# against today's prologue, for one GEMV row block: out[n] = sum_k W[n][k] * LN(x)[k] (the GPT's LayerNorms have no
# affine, cube3d-reference.md). Today: y = (x - mean) * rstd in fp32, split into bf16 hi + lo, two MMAs with
# fp32 accumulation. Plan: x itself split into bf16 hi + lo, acc = W x_hi + W x_lo, out = rstd * (acc - mean * ws),
# ws[n] = sum_k W[n][k] (fp64, rounded to fp32). Error: relative L2 against the fp64 result on the same bf16 W.
# The MMAs' fp32 accumulation is modelled as fp32 sums of k16 chunks. Rows with |mean| / std from 0 to 5, with and
# without a few massive activations. Run: /usr/bin/python3 tools/numerics/ln_linearity_error.py (Debian's numpy).
# Outcome: built in session 44 (CUBEFORGE_GPT_LN_LINEAR), measured in session 45 on an H100: correct but slower
# (+0.6-0.7% at one prompt, +5-6% at batch 4), so removed; kept as the plan's numerics record (docs/cuda-gpt.md).
import numpy as np
rng = np.random.default_rng(1)
D, N = 1536, 4608

def bf16(a):
    a = np.asarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32)

W = bf16(rng.standard_normal((N, D)).astype(np.float32) * 0.02)
W64 = W.astype(np.float64)
ws = W64.sum(axis=1).astype(np.float32)

def mm(Wm, v):  # fp32 accumulation in K order chunks of 16 (an MMA's k16), chunk sums in fp32 (both operands fp32)
    acc = np.zeros(Wm.shape[0], dtype=np.float32)
    for k0 in range(0, D, 16):
        acc += Wm[:, k0:k0 + 16] @ v[k0:k0 + 16]
    return acc

for mu_over_sigma in [0.0, 0.05, 0.2, 1.0, 5.0]:
    for outliers in [False, True]:
        errs_now, errs_lin = [], []
        for trial in range(3):
            x = rng.standard_normal(D).astype(np.float64)
            if outliers:
                x[rng.choice(D, 4, replace=False)] *= 60.0  # a few massive activations, as in real residual streams
            x = (x - x.mean()) / x.std()
            x = (x + mu_over_sigma).astype(np.float32) * 3.0
            mean = x.astype(np.float64).mean(); var = (x.astype(np.float64) ** 2).mean() - mean * mean
            rstd = 1.0 / np.sqrt(var + 1e-6)
            ref = W64 @ ((x.astype(np.float64) - mean) * rstd)
            y = ((x - np.float32(mean)) * np.float32(rstd)).astype(np.float32)
            yh = bf16(y); yl = bf16(y - yh)
            now = mm(W, yh) + mm(W, yl)
            xh = bf16(x); xl = bf16(x - xh)
            acc = mm(W, xh) + mm(W, xl)
            lin = (np.float32(rstd) * (acc - np.float32(mean) * ws)).astype(np.float32)
            rel = lambda o: np.linalg.norm(o - ref) / np.linalg.norm(ref)
            errs_now.append(rel(now)); errs_lin.append(rel(lin))
        print(f"|mean|/std {mu_over_sigma:5.2f} outliers {str(outliers):5}: today {np.median(errs_now):.2e}  "
              f"by linearity {np.median(errs_lin):.2e}  ratio {np.median(errs_lin) / np.median(errs_now):6.1f}")
