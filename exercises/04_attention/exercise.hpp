// Exercise 04: scaled dot-product attention with a mask.
#pragma once

#include <utility>

#include "autograd/autograd.hpp"

// q [B, Tq, d_k], k [B, Tk, d_k], v [B, Tk, d_v], mask broadcasting to [B, Tq, Tk] (1 = attend,
// 0 = hidden; undefined = none) -> {output [B, Tq, d_v], weights [B, Tq, Tk]}
std::pair<anatomy::Tensor, anatomy::Tensor> scaled_dot_product_attention(
    const anatomy::Tensor& q, const anatomy::Tensor& k, const anatomy::Tensor& v,
    const anatomy::Tensor& mask);
