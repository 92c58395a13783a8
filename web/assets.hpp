#pragma once

// The view's assets, compiled into the binary (cmake/embed_web_assets.cmake
// from web/assets/), and the login page, which needs no store.

#include <optional>
#include <string_view>

#include "web/app.hpp"
#include "web/http.hpp"

namespace taskq::web {

// The text of web/assets/NAME; nullopt for any other name.
std::optional<std::string_view> asset_text(std::string_view name);

// /assets/NAME: the asset with its type, cached for a day; 404 else.
Response asset(std::string_view name);

// The page that asks for the token (`failed`: a wrong one was given).
Response login_page(const AppOptions& options, bool failed);

} // namespace taskq::web
