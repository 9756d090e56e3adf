#include "worker/compile/fatbininflate.h"

#include <dlfcn.h>

#include <climits>
#include <new>

namespace kwb {
namespace {

// zstd.h's ZSTD_CONTENTSIZE_UNKNOWN and ZSTD_CONTENTSIZE_ERROR (no header is needed to build).
constexpr unsigned long long kZstdSizeUnknown = 0ULL - 1, kZstdSizeError = 0ULL - 2;

template <typename F>
void bind(void* handle, const char* symbol, F** out, std::string* missing)
{
    *out = handle ? reinterpret_cast<F*>(::dlsym(handle, symbol)) : nullptr;
    if (handle && !*out && missing->empty())
        *missing = std::string("it has no ") + symbol;
}

std::string mib(uint64_t bytes)
{
    return std::to_string(bytes / (1024 * 1024)) + " MiB";
}

} // namespace

FatbinInflater::FatbinInflater(const char* zstdLibrary, const char* lz4Library)
{
    for (auto [lib, name] : {std::pair{&zstd_, zstdLibrary}, std::pair{&lz4_, lz4Library}}) {
        lib->name = name;
        lib->handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (!lib->handle) {
            const char* e = ::dlerror();
            lib->missing = std::string("not found (") + (e ? e : "dlopen failed") + ")";
        }
    }
    bind(zstd_.handle, "ZSTD_decompress", &zstdDecompress_, &zstd_.missing);
    bind(zstd_.handle, "ZSTD_isError", &zstdIsError_, &zstd_.missing);
    bind(zstd_.handle, "ZSTD_getErrorName", &zstdErrorName_, &zstd_.missing);
    bind(zstd_.handle, "ZSTD_getFrameContentSize", &zstdContentSize_, &zstd_.missing);
    bind(lz4_.handle, "LZ4_decompress_safe", &lz4Decompress_, &lz4_.missing);
}

FatbinInflater::~FatbinInflater()
{
    for (Library* lib : {&zstd_, &lz4_})
        if (lib->handle)
            ::dlclose(lib->handle);
}

const FatbinInflater& FatbinInflater::system()
{
    static const FatbinInflater instance;
    return instance;
}

std::string FatbinInflater::inflate(FatbinCompression how, const char* data, std::size_t size, uint64_t expectedSize,
                                    std::vector<char>* out) const
{
    const Library& lib = how == FatbinCompression::Zstd ? zstd_ : lz4_;
    if (!lib.missing.empty())
        return lib.name + " " + lib.missing + ", which decompresses it";
    if (expectedSize == 0)
        return "its header gives no uncompressed size";
    if (expectedSize > kMaxFatbinEntryBytes)
        return "its header says it decompresses to " + std::to_string(expectedSize) + " bytes, past the " +
               mib(kMaxFatbinEntryBytes) + " read per entry";
    if (how == FatbinCompression::Zstd) {
        // nvcc's frames state their size: a header that says otherwise is caught before allocating.
        const unsigned long long framed = zstdContentSize_(data, size);
        if (framed == kZstdSizeError)
            return "its payload is not a zstd frame";
        if (framed != kZstdSizeUnknown && framed != expectedSize)
            return "its zstd frame holds " + std::to_string(framed) + " bytes, its header says " +
                   std::to_string(expectedSize);
    } else if (size > INT_MAX || expectedSize / 256 > size) {
        // An LZ4 block's byte adds at most 255 to a match: no block of `size` bytes makes more.
        return "its header says " + std::to_string(expectedSize) + " bytes, more than " + std::to_string(size) +
               " bytes of LZ4 can hold";
    }
    try {
        out->assign(std::size_t(expectedSize), '\0');
    } catch (const std::bad_alloc&) {
        return "no memory for its " + std::to_string(expectedSize) + " bytes";
    }
    std::size_t made = 0;
    if (how == FatbinCompression::Zstd) {
        made = zstdDecompress_(out->data(), out->size(), data, size);
        if (zstdIsError_(made)) {
            out->clear();
            return std::string("zstd: ") + zstdErrorName_(made);
        }
    } else {
        const int n = lz4Decompress_(data, out->data(), int(size), int(expectedSize));
        if (n < 0) {
            out->clear();
            return "LZ4: the block is malformed or truncated";
        }
        made = std::size_t(n);
    }
    if (made != expectedSize) {
        out->clear();
        return "it decompressed to " + std::to_string(made) + " bytes, its header says " + std::to_string(expectedSize);
    }
    return {};
}

} // namespace kwb
