# SPDX-License-Identifier: Apache-2.0
"""JAX: jit of value_and_grad w.r.t. (c, f, i, g) on the CPU backend."""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import inputs  # noqa: E402


def cell_loss(z, zb, c, f, i, g, w):
    flush = jax.nn.sigmoid(i) * jnp.tanh(g)
    update = jax.nn.sigmoid(f) * c + flush
    y = jnp.where(z == 1, flush, jnp.where(zb == 0, c, update))
    return jnp.sum(y * w)


def main():
    args = inputs.parse_args(__doc__)
    step = jax.jit(jax.value_and_grad(cell_loss, argnums=(2, 3, 4, 5)))
    runs = []
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, float32, median of {args.reps}")
    for d, x in inputs.generate(args.dims):
        xs = [jax.device_put(x[k]) for k in ("z", "zb", "c", "f", "i", "g", "w")]
        loss, grads = jax.block_until_ready(step(*xs))  # compiles for this shape
        ref = inputs.check(x, float(loss), [jax.device_get(t) for t in grads], f"jax jit dims {d}")
        ms = inputs.median_ms(lambda: jax.block_until_ready(step(*xs)), args.reps)
        print(f"dims {d}: jit {ms:9.3f} ms")
        runs.append({"dims": d, "variant": "jit", "median_ms": ms, "loss": float(loss), "ref_loss": ref})
    inputs.write_json(args.json, "jax", jax.__version__, runs)


if __name__ == "__main__":
    main()
