// The LibTorch headers that nearly every tensor unit parses (ATen's tensor and operators, IValue,
// the CPU generator, parallel_for, grad mode), compiled once per build for the engine (audit), the
// model readers (formats) and their tests. torch::nn and torch::optim stay out: their inline code
// queues template instantiations that every unit using the header would redo at its end, about
// 2.5 s each, for units that need none of it (torch_headers.h has them).
#pragma once
#include "pch/common_headers.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/ivalue.h>
