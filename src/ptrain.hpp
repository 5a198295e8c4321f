#pragma once
// ptrain as a library: everything a program needs to describe a run (the
// plan), choose where its workers run (the world), bring its own model and
// data, run it, write its report, save the trained model and evaluate a
// saved one. Installed as <ptrain/ptrain.hpp>.
#include "core/dataset.hpp"
#include "core/error.hpp"
#include "core/model.hpp"
#include "plan/plan_json.hpp"
#include "plan/run_plan.hpp"
#include "run/evaluate_saved.hpp"
#include "run/report.hpp"
#include "run/run.hpp"
#include "run/save_model.hpp"
#include "run/world.hpp"
#include "run/result_file.hpp"
// A program that brings its own LibTorch module also includes
// <ptrain/model/torch/torch_module_model.hpp> (torch_module()).
