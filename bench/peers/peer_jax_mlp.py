# SPDX-License-Identifier: Apache-2.0
"""JAX: the MLP training step of bench_mlp as one jit (value_and_grad and Adam).

The loss as peer_torch_mlp.py's (jax.nn.gelu(approximate=True) is the tanh
form), Adam written out with PyTorch's formula (its bias corrections computed
on the host in double, as torch.optim.Adam does), parameters and moments
donated so that the step updates them in place. Matrix products in true
float32 (jax_default_matmul_precision "highest": JAX would otherwise use
TF32 on GPUs). On the CPU backend by default (JAX_PLATFORMS).
"""
import math
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import inputs  # noqa: E402
import mlp_inputs  # noqa: E402

jax.config.update("jax_default_matmul_precision", "highest")


def mlp_loss(params, x, labels):
    w1, b1, w2, b2 = params
    logits = jax.nn.gelu(x @ w1 + b1, approximate=True) @ w2 + b2
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def train_step(params, m, v, step_size, bc2_sqrt, x, labels):
    loss, grads = jax.value_and_grad(mlp_loss)(params, x, labels)
    b1, b2, eps = mlp_inputs.BETA1, mlp_inputs.BETA2, mlp_inputs.EPS
    m = [b1 * mi + (1 - b1) * g for mi, g in zip(m, grads)]
    v = [b2 * vi + (1 - b2) * g * g for vi, g in zip(v, grads)]
    params = [p - step_size * mi / (jnp.sqrt(vi) / bc2_sqrt + eps) for p, mi, vi in zip(params, m, v)]
    return params, m, v, loss


class Trainer:
    def __init__(self, data):
        self.x = jax.device_put(data["x"])
        self.labels = jax.device_put(data["labels"].astype("int32"))
        self.params = [jax.device_put(data[k]) for k in ("W1", "b1", "W2", "b2")]
        self.m = [jnp.zeros_like(p) for p in self.params]
        self.v = [jnp.zeros_like(p) for p in self.params]
        self.t = 0
        self.fn = jax.jit(train_step, donate_argnums=(0, 1, 2))

    def step(self):
        self.t += 1
        step_size = mlp_inputs.LR / (1 - mlp_inputs.BETA1 ** self.t)
        bc2_sqrt = math.sqrt(1 - mlp_inputs.BETA2 ** self.t)
        self.params, self.m, self.v, loss = self.fn(self.params, self.m, self.v, jnp.float32(step_size),
                                                    jnp.float32(bc2_sqrt), self.x, self.labels)
        return jax.block_until_ready(loss)


def main():
    args = mlp_inputs.parse_args(__doc__)
    runs, wrong = [], 0
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, MLP step, float32, median of {args.reps}")
    for d in args.sizes:
        data = mlp_inputs.generate(d)
        name = mlp_inputs.dims_text(d)
        t = Trainer(data)
        losses = [float(t.step()) for _ in range(args.check_steps)]  # compiles on the first
        if not mlp_inputs.losses_ok(losses, mlp_inputs.reference_loss(data), f"{name} jit"):
            wrong += 1
            continue
        ms = inputs.median_ms(t.step, args.reps)
        gflops = mlp_inputs.step_flops(d) / ms * 1e-6
        print(f"{name}: jit {ms:9.3f} ms {gflops:8.1f} GFLOP/s  losses {losses[0]:.6f} .. {losses[-1]:.6f}")
        runs.append({"dims": name, "variant": "jit", "median_ms": ms, "gflops": gflops, "losses": losses})
    inputs.write_json(args.json, "jax", jax.__version__, runs, benchmark="mlp")
    if wrong:
        raise SystemExit(f"peer_jax_mlp: {wrong} size(s) computed a wrong loss")


if __name__ == "__main__":
    main()
