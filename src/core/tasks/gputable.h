#pragma once
// The roofs of a GPU for the roofline: memory bandwidth and compute peaks, from the GPU table of
// vendor datasheet peaks (gpuTable(): the data file gpus/datasheets.json, docs/roofline.md "The GPU
// table") or from the worker's `device` response for the GPU this machine has (fromDeviceResponse()).
//
// A roofline bounds a kernel of arithmetic intensity I (FLOP per HBM byte) at
// min(bandwidth · I, compute peak). Which compute peak applies depends on the kernel: the FP32
// (non-tensor) roof bounds the study's fp32 kernels (the kernelbench profile turns TF32 off), while
// the tensor-core roofs apply only to kernels that run on tensor cores. So a GpuRoofs keeps every
// roof with its kind and origin, and says which memory and FP32 roof are the primary ones
// (measured where there is a measurement).

#include "core/protocol/devicefacts.h"

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

namespace kwb {

struct Roof
{
    enum class Kind {
        Memory,     ///< HBM (or GDDR) bandwidth, GB/s
        Fp32,       ///< FP32 FMA on the CUDA cores, GFLOP/s
        Tf32Tensor, ///< tensor cores, TF32 inputs, dense, GFLOP/s
        Bf16Tensor, ///< tensor cores, BF16 inputs (FP16 runs at the same rate where both exist)
        Fp16Tensor, ///< tensor cores, FP16 inputs, on GPUs without BF16 (Volta)
    };
    enum class Origin {
        Datasheet,   ///< the vendor's published peak
        Theoretical, ///< computed from the device's own clocks and widths
        Measured,    ///< measured on this machine by the worker
    };

    Kind kind = Kind::Memory;
    Origin origin = Origin::Datasheet;
    double value = 0.0; ///< GB/s for Memory, GFLOP/s otherwise
    QString label;      ///< "FP32", "TF32 tensor", "HBM", …; origin is not part of it
    QString note;       ///< where the number comes from (method of a measurement, datasheet caveat)
    QString source;     ///< a datasheet roof's document (the table's source title); empty otherwise

    bool isCompute() const { return kind != Kind::Memory; }
    bool isTensor() const { return kind == Kind::Tf32Tensor || kind == Kind::Bf16Tensor || kind == Kind::Fp16Tensor; }
    /// "measured", "theoretical" or "datasheet".
    QString originText() const;
    /// "FP32 66.9 TFLOP/s (measured)", "HBM 4.27 TB/s (measured)".
    QString displayText() const;
};

struct GpuRoofs
{
    QString key;      ///< stable id: "v100-sxm2-32gb", …; "current" for the device response
    QString name;     ///< "NVIDIA H200 SXM 141GB"
    QString citation; ///< where the numbers come from
    /// Regular expressions (case-insensitive) the name CUDA reports for this GPU matches; a table
    /// entry's only (findGpuForDevice()).
    QStringList deviceNames;
    int smCount = 0;
    qint64 l2Bytes = 0;
    QList<Roof> roofs; ///< every roof; order within a kind: primary first

    /// A GPU is drawable with a memory roof and at least one compute roof.
    bool isValid() const;

    /// The memory roof the chart's diagonal uses: measured where there is one, else the first.
    /// nullptr when there is none.
    const Roof* primaryMemory() const;
    /// The FP32 roof that bounds fp32 kernels: measured where there is one, else the first.
    const Roof* primaryFp32() const;
    /// Every roof of one kind, primary first.
    QList<Roof> roofsOf(Roof::Kind kind) const;

    double bandwidthGBps() const;
    double fp32Gflops() const;
    /// The ridge point of a compute peak against the primary memory roof, in FLOP/byte.
    double ridgeIntensity(double computeGflops) const;
    /// The ridge point of the FP32 roof: kernels below it are memory-bound.
    double fp32RidgeIntensity() const;
    /// The attainable GFLOP/s at an intensity under the primary memory and FP32 roofs.
    double attainableGflops(double intensity) const;
};

/// A GPU table read from its file: the entries in file order, or the first error.
struct GpuTableLoad
{
    QList<GpuRoofs> gpus;
    /// "FILE: gpus[2] (h100-sxm-80gb): roofs[1].unit: …": the file, the entry (index and key), the
    /// field and what is wrong with it; "FILE:LINE:COLUMN: …" for text that is not JSON. Empty when
    /// the table loaded.
    QString error;
    /// The user's files left out (loadGpuTables()), each "FILE: …" with why: a bad file, or a key
    /// the table already has. Their entries are not in `gpus`; the rest of the table is.
    QStringList skipped;
    bool ok() const { return error.isEmpty(); }
};

/// Reads a GPU table in the shipped file's format (gpus/datasheets.json, docs/roofline.md "The GPU
/// table"). `origin` names the text in errors (its path). Every field is checked: an unknown field,
/// a missing or mistyped one, a unit that is not the kind's, a value that is not a positive number,
/// a source the file does not list, a duplicate key or a device name that is not a regular
/// expression is an error, and no entry of a bad file is used.
GpuTableLoad parseGpuTable(const QByteArray& json, const QString& origin);
/// parseGpuTable() of the file at `path` (an error when it cannot be read).
GpuTableLoad loadGpuTable(const QString& path);
/// The folder of the user's GPUs: GenericConfigLocation/kernel-workbench/gpus
/// (~/.config/kernel-workbench/gpus on Linux, $XDG_CONFIG_HOME's where set). Each *.json file there
/// is in the shipped file's format (docs/roofline.md, "Adding a GPU"). Not created.
QString userGpuTableDir();
/// The table at `path` followed by the entries of every *.json file of `userDir`, in name order. A
/// bad shipped table gives no table (`error`); a bad user file, or one with a key already in the
/// table, is left out whole, with its error in `skipped`.
GpuTableLoad loadGpuTables(const QString& path, const QString& userDir);
/// Where the GPU table is: $KWB_GPU_TABLE, else share/kernel-workbench/gpus/datasheets.json next to
/// the program when installed, else the source tree's gpus/datasheets.json (as the prompts are found).
QString defaultGpuTablePath();

/// The GPU table, loaded once: defaultGpuTablePath() (V100 SXM2 32GB, A100 SXM 80GB, H100 SXM,
/// H200 SXM, L40S, RTX 4090 as shipped), then the user's GPUs (userGpuTableDir()). Vendor datasheet
/// peaks; tensor-core peaks dense (without 2:4 sparsity). Empty when the file is missing or bad;
/// gpuTableError() then says why (also logged once with qWarning, as is each user file left out).
const QList<GpuRoofs>& gpuTable();
/// Why gpuTable() is empty: the load's error; empty when the table loaded.
QString gpuTableError();
/// The user's GPU files gpuTable() left out, with why (GpuTableLoad::skipped).
QStringList gpuTableSkipped();
/// The table entry with this key; nullptr if none.
const GpuRoofs* findGpu(const QString& key);
/// The first table entry one of whose deviceNames matches the name CUDA reports ("NVIDIA H200");
/// nullptr if none.
const GpuRoofs* findGpuForDevice(const QString& deviceName);

/// The roofs of "the current GPU" from the worker's `device` response (docs/protocol.md §device).
/// Measured ceilings come first (origin Measured) and the theoretical numbers follow where the
/// response has them: HBM from the memory clock and bus width, FP32 from SMs × lanes × 2 × clock.
/// The response is read by decodeDeviceFacts() (core/protocol/devicefacts.h), which knows every
/// spelling the protocol has had. A response without a GPU ("available": false) gives roofs that
/// are not valid, with the reason in `citation`.
GpuRoofs fromDeviceResponse(const QJsonObject& device);
GpuRoofs fromDeviceFacts(const DeviceFacts& device);

// fp32FmaLanesPerSm() lives in core/protocol/devicefacts.h.

} // namespace kwb
