#pragma once
// What a compiled kernel is made of, without a GPU (issue 40): registers, local memory, shared and
// constant memory, the block size it can launch with, its PTX and SASS. Read from the cubin's ELF
// (NVRTC's, or each cubin of a torch extension's .nv_fatbin), from ptxas's `-v` lines where NVRTC
// ran, and from the toolkit's nvdisasm where one is installed. No NVRTC, no CUDA runtime: plain
// parsing, so it runs on every machine the worker builds on.
//
// The cubin attributes relied on (codes of NVIDIA's EIATTR enumeration, as cuobjdump names them;
// checked against ptxas -v on NVRTC 13 cubins for sm_75, sm_80, sm_90 and sm_100 by tst_kernelfacts):
//   .nv.info (module-wide, each value {u32 symbol index, u32 value}):
//     0x2f REGCOUNT     registers per thread
//     0x11 FRAME_SIZE   the per-thread stack frame in local memory (spills and local arrays)
//   .nv.info.<kernel>:
//     0x05 MAX_THREADS  __launch_bounds__'s maximum threads per block {x, y, z}
//     0x10 REQNTID      a required block size {x, y, z} (PTX .reqntid)
//     0x19 CBANK_PARAM_SIZE  the kernel's parameter bytes
//     0x4c NUM_BARRIERS named barriers used
// Sections: .nv.shared.<kernel> (static shared memory; from sm_90 on it includes the 1 KiB the
// system reserves per block, marked by the symbol .nv.reservedSmem.offset0, whose size
// .nv.reservedSmem.cap gives where present, and which is subtracted), .nv.constant<N>.<kernel>
// (the kernel's constant banks: bank 0 holds its parameters and the driver's launch header) and
// .nv.constant<N> (the module's __constant__ data and the compiler's constants, shared by every
// kernel of the module).

#include "worker/compile/fatbininflate.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kwb {

struct KernelFacts
{
    std::string name;      ///< the symbol: "add" (extern "C") or "_Z2tkILi64EEvPf"
    std::string demangled; ///< "void tk<64>(float*)"; the name itself where it is not mangled
    std::string arch;      ///< "sm_90"
    std::string module;    ///< the extension a cubin came from; empty for NVRTC's
    std::optional<int> registers;
    std::optional<int64_t> localBytes;                      ///< the stack frame per thread (FRAME_SIZE)
    std::optional<int64_t> spillStoreBytes, spillLoadBytes; ///< ptxas -v only (NVRTC)
    std::optional<int64_t> staticSharedBytes;
    std::optional<int64_t> constantBytes;       ///< the kernel's own banks (.nv.constant<N>.<kernel>)
    std::optional<int64_t> moduleConstantBytes; ///< the module's banks, shared by its kernels
    std::optional<int64_t> paramBytes;
    std::optional<int> barriers;
    int maxThreadsPerBlock = 0;
    /// What bounds maxThreadsPerBlock: "launch_bounds", "reqntid", "registers" (64 Ki registers
    /// per block, allocated per warp in units of 256) or "hardware" (1024).
    std::string maxThreadsLimit;
    std::optional<std::string> ptx, sass; ///< this kernel's part, capped (kMaxKernelText)
    std::string ptxNote, sassNote;        ///< why ptx or sass is absent, or that it was cut
};

/// The most bytes of PTX or SASS kept per kernel, and for one candidate's kernels together; the
/// kernels kept per candidate. A run database keeps these texts with every evaluation.
inline constexpr std::size_t kMaxKernelText = 32 * 1024;
inline constexpr std::size_t kMaxCandidateKernelText = 256 * 1024;
inline constexpr std::size_t kMaxFactKernels = 64;

/// The kernels (entry functions) of one cubin and their resource facts. `error` says why none
/// could be read (not an ELF, a truncated file).
std::vector<KernelFacts> cubinKernelFacts(const char* data, std::size_t size, const std::string& arch,
                                          std::string* error);

/// One payload of a fatbinary: a cubin (ELF) or PTX text, for one sm_ number.
struct FatbinEntry
{
    bool elf = false;
    int sm = 0;              ///< 90 for sm_90
    std::vector<char> bytes; ///< the cubin, or the PTX without the NULs that pad it; decompressed
    std::string compression; ///< "zstd" or "LZ4" where nvcc compressed it, else empty
    std::string unreadable;  ///< set (bytes empty) where it could not be decompressed, and why
};
/// The most bytes fatbinEntries decompresses for one shared object, all entries together (the
/// size of the largest .so the worker reads): a fatbin of many entries with lying sizes costs no more.
inline constexpr uint64_t kMaxFatbinInflatedBytes = 512ull * 1024 * 1024;
/// The entries of every fatbinary in a shared object's .nv_fatbin section (what nvcc puts in a
/// torch extension). Entries nvcc compressed (flag 0x8000 zstd, 0x2000 LZ4; nvcc 13 compresses PTX
/// by default, cubins too with -Xfatbin -compress-all or --compress-mode=size)
/// are decompressed with `inflater`; one that cannot be is listed with `unreadable` saying why.
/// `error`: the file is no ELF64 or has no .nv_fatbin section.
std::vector<FatbinEntry> fatbinEntries(const std::vector<char>& sharedObject, std::string* error,
                                       const FatbinInflater& inflater = FatbinInflater::system());

/// Adds ptxas -v's spill counts (its "Function properties for X" lines) to the kernels named.
void addPtxasInfo(std::vector<KernelFacts>& kernels, const std::string& ptxasInfo);

/// The `.entry <name>(…) {…}` of a PTX module; empty where the module has no such entry.
std::string ptxEntry(const std::string& ptx, const std::string& name);

/// The toolkit's nvdisasm: $KWB_NVDISASM, else next to the CUDA include directories given (their
/// ../bin and ../../../bin), else on PATH; empty where none is installed.
std::string findNvdisasm(const std::vector<std::string>& cudaIncludeDirs);

/// Disassembles `cubin` with nvdisasm and gives each kernel's SASS (instructions and labels, one a
/// line, without offsets), or sets `sassNote` on every kernel to why not.
void addSass(std::vector<KernelFacts>& kernels, const std::vector<char>& cubin, const std::string& nvdisasm);

/// nvdisasm -c's listing split by kernel: each one's instructions and labels, one a line, without
/// the offsets and encodings nvdisasm prints beside them.
std::map<std::string, std::string> sassByKernel(const std::string& nvdisasmListing);

/// Sets each kernel's ptx from `ptx` (the module NVRTC or the fatbin holds).
void addPtx(std::vector<KernelFacts>& kernels, const std::string& ptx);

/// Caps the texts: each at kMaxKernelText, all together at kMaxCandidateKernelText, each cut
/// said in its note. Keeps the first kMaxFactKernels kernels; returns how many it dropped.
std::size_t capKernelTexts(std::vector<KernelFacts>& kernels);

/// The facts of a torch extension (its built .so): every kernel of the cubins for `sm` (all cubins
/// where none is for it), PTX from the fatbin where it holds any, SASS with nvdisasm. `note` says
/// what could not be read (a cubin that would not decompress, no fatbin).
std::vector<KernelFacts> extensionKernelFacts(const std::string& soPath, const std::string& module, int sm,
                                              const std::string& nvdisasm, std::string* note);

struct CompileResult;
/// The facts of NVRTC's cubin (compileCuda): the ELF's, ptxas -v's spills, the PTX NVRTC made, the
/// SASS where `nvdisasm` names one.
std::vector<KernelFacts> compiledKernelFacts(const CompileResult& compiled, const std::string& nvdisasm);

/// `compile.kernel_facts` (docs/protocol.md §evaluate): one object per kernel.
nlohmann::json kernelFactsJson(const std::vector<KernelFacts>& kernels);

/// What `compile` answers and an evaluation's compile record both hold (docs/protocol.md): the
/// kernels' facts, capped (capKernelTexts), as `kernel_facts`, and `kernel_facts_note` where
/// `note` or the cap has something to say.
nlohmann::json kernelFactsRecord(std::vector<KernelFacts> kernels, std::string note);

/// Whether `record` has kernelFactsRecord's shape: `kernel_facts` an array of objects, each with
/// a string `name`, and `kernel_facts_note`, where present, a string (what an evaluation takes
/// from its request's `cubin_kernel_facts`).
bool isKernelFactsRecord(const nlohmann::json& record);

/// "void tk<64>(float*)" for "_Z2tkILi64EEvPf"; `name` itself where it is not a mangled name.
std::string demangle(const std::string& name);

} // namespace kwb
