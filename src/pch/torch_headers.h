// aten_headers.h and the torch::nn modules and optimizer that the models, the trainers, the CLI
// and their tests are built of, compiled once per build for those targets.
#pragma once
#include "pch/aten_headers.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/optim/adamw.h>
#include <torch/version.h>
