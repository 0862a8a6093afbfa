// A visitor from lambdas, for std::visit over the engine's inputs and commands.
#pragma once

namespace reclaimd {

template <class... F>
struct Overload : F... {
  using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;

}  // namespace reclaimd
