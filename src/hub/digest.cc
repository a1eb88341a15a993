#include "hub/digest.h"

#include <openssl/evp.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "util/check.h"

namespace recur::hub {

struct Digest::Impl {
  EVP_MD_CTX* ctx = nullptr;
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

Digest::Digest(DigestKind kind) : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  RECUR_CHECK(impl_->ctx != nullptr);
  const EVP_MD* md = kind == DigestKind::kSha256 ? EVP_sha256() : EVP_sha1();
  RECUR_CHECK(EVP_DigestInit_ex(impl_->ctx, md, nullptr) == 1);
}

Digest::~Digest() = default;

void Digest::update(std::string_view bytes) {
  RECUR_CHECK(EVP_DigestUpdate(impl_->ctx, bytes.data(), bytes.size()) == 1);
}

std::string Digest::hex_final() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  RECUR_CHECK(EVP_DigestFinal_ex(impl_->ctx, out, &n) == 1);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * n);
  for (unsigned int i = 0; i < n; ++i) {
    hex += kHex[out[i] >> 4];
    hex += kHex[out[i] & 15];
  }
  return hex;
}

Result<std::string> file_digest(const std::string& path, DigestKind kind) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) return Error(StatusCode::kIo, "cannot read {}", path);
  Digest d(kind);
  if (kind == DigestKind::kSha1) {
    const std::string header = "blob " + std::to_string(size);
    d.update(std::string_view(header.data(), header.size() + 1));  // with its NUL
  }
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    d.update(std::string_view(buf.data(), static_cast<std::size_t>(in.gcount())));
  }
  if (in.bad()) return Error(StatusCode::kIo, "cannot read {}", path);
  return d.hex_final();
}

}  // namespace recur::hub
