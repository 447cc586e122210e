/* SPDX-License-Identifier: Apache-2.0 */
/* The HM-LSTM cell update in plain syntax (input of the clmad_info_lower test). */
T cell_update(T z, T zb, T c, T f, T i, T g)
{
    if (z == 1)  return sigmoid(i) * tanh(g);      /* FLUSH  */
    if (zb == 0) return c;                         /* COPY   */
    return sigmoid(f) * c + sigmoid(i) * tanh(g);  /* UPDATE */
}
