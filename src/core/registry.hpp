#pragma once
// A registry of the kinds of one thing (codecs, strategies, optimizers,
// models, data sets): a std::variant of their options structs (core/fields.hpp),
// each with its `name`. Registering a kind is adding its struct to the list;
// this is the only place where a kind's name is compared.
#include <array>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace ptrain {

// The closest of `names` to `wrong`, when it is close enough to be a likely typo.
std::optional<std::string> closest_name(std::string_view wrong, std::span<const std::string_view> names);

template <class... Kinds>
struct Registry {
  using Choice = std::variant<Kinds...>;

  static constexpr std::array<std::string_view, sizeof...(Kinds)> names() { return {Kinds::name...}; }

  // The kind called `name`, with its defaults; nullopt for an unknown name.
  static std::optional<Choice> make(std::string_view name) {
    std::optional<Choice> out;
    ((Kinds::name == name ? (void)(out = Choice(Kinds{})) : (void)0), ...);
    return out;
  }

  static std::string_view name_of(const Choice& c) {
    return std::visit([](const auto& k) { return std::decay_t<decltype(k)>::name; }, c);
  }

  // "a, b or c"
  static std::string listed() {
    std::string out;
    const auto all = names();
    for (size_t i = 0; i < all.size(); ++i)
      out += (i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + std::string(all[i]);
    return out;
  }

  // "unknown codec 'zipp' (did you mean zip?; choose none, fp16, ...)"
  static std::string unknown(std::string_view what, std::string_view name) {
    const auto all = names();
    const auto near = closest_name(name, all);
    return "unknown " + std::string(what) + " '" + std::string(name) + "' (" +
           (near ? "did you mean " + *near + "? " : "") + "choose " + listed() + ")";
  }
};

}  // namespace ptrain
