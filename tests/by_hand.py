"""The RNN decoders' building blocks computed by hand, for the paper model tests that rebuild a decoder step by step
(werlen2018 A.1-A.3, zhang2018's RNNsearch and RNNsearch*, shu2016's attention): one GRU step and the additive
attention."""
import torch


def gru_by_hand(x, h, cell):
    """werlen2018 A.1 with dl4mt's r * (U h + b) candidate: z, r gates; h = z * h + (1 - z) * candidate."""
    w_r, w_z, w_n = cell.weight_ih.chunk(3)
    u_r, u_z, u_n = cell.weight_hh.chunk(3)
    b_r, b_z, b_n = cell.bias_ih.chunk(3)
    c_r, c_z, c_n = cell.bias_hh.chunk(3)
    r = torch.sigmoid(x @ w_r.T + b_r + h @ u_r.T + c_r)
    z = torch.sigmoid(x @ w_z.T + b_z + h @ u_z.T + c_z)
    candidate = torch.tanh(x @ w_n.T + b_n + r * (h @ u_n.T + c_n))
    return z * h + (1 - z) * candidate


def attention_by_hand(attention, query, keys, pad):
    """e_i = v^T tanh(W_d q + W_e h_i + b) + c, softmax over the non-padding keys, c = sum alpha_i h_i."""
    scores = []
    for i in range(keys.size(0)):
        pre = attention.query_proj.weight @ query + attention.key_proj.weight @ keys[i] + attention.key_proj.bias
        scores.append((attention.score.weight @ torch.tanh(pre) + attention.score.bias).squeeze())
    scores = torch.stack(scores).masked_fill(pad, float("-inf"))
    alpha = torch.softmax(scores, 0)
    return alpha @ keys, alpha
