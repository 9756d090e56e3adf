#pragma once
// Decompressing the entries of a fatbinary that nvcc compressed (issue 40: a torch extension's
// PTX and cubins). nvcc's fatbin compression stores an entry as one zstd frame (flag 0x8000) or
// one raw LZ4 block (flag 0x2000); the system's libzstd.so.1 and liblz4.so.1 are opened at run
// time, so the worker needs no build dependency for them and says which library is missing where
// one is. The .so is the candidate's: every size it states is checked before memory is taken.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kwb {

enum class FatbinCompression { Zstd, Lz4 };

/// The most bytes one fatbin entry may decompress to: far above any cubin or PTX a candidate's
/// extension holds, far below what would hurt the worker.
inline constexpr uint64_t kMaxFatbinEntryBytes = 256ull * 1024 * 1024;

class FatbinInflater
{
public:
    /// Opens the libraries by these names (the defaults are the system's sonames).
    explicit FatbinInflater(const char* zstdLibrary = "libzstd.so.1", const char* lz4Library = "liblz4.so.1");
    ~FatbinInflater();
    FatbinInflater(const FatbinInflater&) = delete;
    FatbinInflater& operator=(const FatbinInflater&) = delete;

    /// The process's one instance with the system's libraries, opened on first use.
    static const FatbinInflater& system();

    /// Decompresses `size` bytes at `data` into `out`, which must come to exactly `expectedSize`
    /// bytes (what the entry's header says). Returns "" where it did, else why not: the library is
    /// missing, the size is 0 or past kMaxFatbinEntryBytes, the stream says another size, is
    /// truncated or corrupt, or came to another size.
    std::string inflate(FatbinCompression how, const char* data, std::size_t size, uint64_t expectedSize,
                        std::vector<char>* out) const;

private:
    struct Library
    {
        std::string name;
        void* handle = nullptr;
        std::string missing; ///< why it could not be opened, or lacks a function used here
    };
    Library zstd_, lz4_;
    // ZSTD_decompress, ZSTD_isError, ZSTD_getErrorName, ZSTD_getFrameContentSize; LZ4_decompress_safe
    std::size_t (*zstdDecompress_)(void*, std::size_t, const void*, std::size_t) = nullptr;
    unsigned (*zstdIsError_)(std::size_t) = nullptr;
    const char* (*zstdErrorName_)(std::size_t) = nullptr;
    unsigned long long (*zstdContentSize_)(const void*, std::size_t) = nullptr;
    int (*lz4Decompress_)(const char*, char*, int, int) = nullptr;
};

} // namespace kwb
