#pragma once
// A model kind's TorchScript form, so that a trained model can be saved as a
// module Python's torch.jit.load runs (model/saved_model.hpp). A kind that
// has one declares `ModelScript script(const ModelInput&) const`; the others
// cannot be saved, and saving them says so.
#include <string>
#include <vector>

namespace ptrain {

struct ModelScript {
  // Either the module is written here, as TorchScript source...
  std::string class_name;  // e.g. "Mlp" (Python sees __torch__.ptrain.Mlp)
  std::vector<std::string>
      parameters;  // the attribute each segment of the model's layout becomes, in layout order
  // `def forward(self, x: Tensor) -> Tensor:` over self.<parameters>, computing
  // what the model computes, from inputs as the model takes them (standardised).
  std::string forward;
  // A recurrent model: forward takes a sequence of any length from a zero
  // state, so a token stream is scored as whole rows (core/dataset.hpp's
  // as_evaluation_rows), the state carried through each as in training.
  bool recurrent = false;
  // ...or it is a TorchScript file already (model torchscript): its module,
  // with the trained weights in place of the file's.
  std::string module_file;
};

}  // namespace ptrain
