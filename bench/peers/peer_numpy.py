# SPDX-License-Identifier: Apache-2.0
"""NumPy: the HM-LSTM cell's forward and hand-derived backward in float32.

Every branch is computed for every element and np.where picks, as a NumPy
program would; the backward uses the adjoint of the cell output, which is w.
"""
import numpy as np

import inputs


def fwd_bwd(z, zb, c, f, i, g, w):
    flush = z == 1
    copy = ~flush & (zb == 0)
    update = ~flush & ~copy
    one = np.float32(1)
    sf = one / (one + np.exp(-f))
    si = one / (one + np.exp(-i))
    tg = np.tanh(g)
    y = np.where(flush, si * tg, np.where(copy, c, sf * c + si * tg))
    loss = np.sum(y * w)
    gc = np.where(update, w * sf, np.where(copy, w, np.float32(0)))
    gf = np.where(update, w * sf * (one - sf) * c, np.float32(0))
    gi = np.where(copy, np.float32(0), w * si * (one - si) * tg)
    gg = np.where(copy, np.float32(0), w * si * (one - tg * tg))
    return loss, (gc, gf, gi, gg)


def main():
    args = inputs.parse_args(__doc__)
    runs = []
    print(f"numpy {np.__version__}, float32, median of {args.reps}")
    for d, x in inputs.generate(args.dims):
        xs = [x[k] for k in ("z", "zb", "c", "f", "i", "g", "w")]
        loss, grads = fwd_bwd(*xs)
        ref = inputs.check(x, float(loss), grads, f"numpy dims {d}")
        ms = inputs.median_ms(lambda: fwd_bwd(*xs), args.reps)
        print(f"dims {d}: hand {ms:9.3f} ms")
        runs.append({"dims": d, "variant": "hand", "median_ms": ms, "loss": float(loss), "ref_loss": ref})
    inputs.write_json(args.json, "numpy", np.__version__, runs)


if __name__ == "__main__":
    main()
