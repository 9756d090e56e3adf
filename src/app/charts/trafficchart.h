#pragma once
// The HBM traffic of one task. On the left, on one scale, three totals side by side: unfused
// (every op its own kernel), library op + one fused epilogue (what a competent candidate does:
// cuBLAS/cuDNN for the heavy ops, one pass for what follows each), and one kernel (inputs and
// parameters read once, the output written once), each with its bytes and its ratio to unfused.
// On the right, on its own scale, the op chain, each op with the bytes it reads and writes when
// it runs alone. The title, legend, both axes and the totals stay in view while a long chain
// scrolls under them. The numbers are the
// worker's `analyze` response (analytic, from shapes). Where a `profile` of the eager reference
// is given, each op also shows its measured time and the bytes that time would move at the
// device's bandwidth: an op whose implied bytes match its analytic bytes runs at the memory roof;
// one far above spends its time on compute. For the chosen GPU (setGpu) each total also says the
// least time its bytes take at that GPU's bandwidth ("5.74 GB → 1.20 ms at 4.80 TB/s"). Where the
// one kernel is no real option (two or more matmul/conv ops: a network whose intermediates
// cannot all stay on chip) it is drawn as a bound: a dashed outline, labelled "bound".

#include "app/charts/chartexport.h"
#include "core/protocol/workerresponses.h"

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QWidget>

#include <optional>

class QScrollArea;

namespace kwb::app {

/// One op of the analysed forward that moves bytes.
struct TrafficOp
{
    int index = 0;    ///< analyze's op index
    QString op;       ///< "aten::conv2d"
    QString category; ///< "conv", "elementwise", …
    double flops = 0.0;
    qint64 bytes = 0;      ///< analyze's `bytes`: reads + writes when the op runs alone
    qint64 readBytes = 0;  ///< its tensor inputs (bytes split by element counts, see below)
    qint64 writeBytes = 0; ///< its output
    QList<QList<qint64>> inputs;
    QList<qint64> output;
    std::optional<double> measuredNs; ///< from a profile: mean time of the op's kernels
    int kernels = 0;                  ///< from a profile: kernels the op launched

    /// "conv2d": the op without its namespace.
    QString shortName() const;
};

/// The analysis reduced to what the chart draws. Byte totals are the response's own (the sum of
/// the ops' bytes is bytes_unfused), so the chart never recomputes what the worker defined.
struct TrafficBreakdown
{
    QString task;
    QString scale;
    QList<TrafficOp> ops; ///< ops that move bytes, in program order
    int zeroByteOps = 0;  ///< view and shape ops (0 bytes), not drawn
    qint64 unfusedBytes = 0;
    qint64 fusedBytes = 0;
    qint64 fusedReadBytes = 0;  ///< inputs + parameters, each once
    qint64 fusedWriteBytes = 0; ///< the output, once
    double flops = 0.0;
    /// Library ops as their own kernels and one fused pass per run of other ops
    /// (core trafficModel(), docs/roofline.md); empty when the chain has no library op.
    std::optional<qint64> libraryEpilogueBytes;
    int libraryOps = 0, fusedPasses = 0;
    QString error; ///< why the response cannot be drawn; empty when it can

    bool isValid() const { return error.isEmpty() && !ops.isEmpty(); }
    /// One kernel is a bound, not an option a kernel can reach, when it would have to keep the
    /// output of one library op on chip for another: with two or more matmul/conv ops (ResNet's
    /// hundred convolutions, an MLP's layers). With one, it is that op with its epilogue fused.
    bool oneKernelIsBound() const { return libraryOps > 1; }
    /// bytes_unfused / bytes_fused: how many times less HBM traffic one fused kernel moves.
    double ratio() const;
};

/// Reads an `analyze` response, decoded (docs/protocol.md §analyze). An op's `bytes` counts each tensor
/// input once and its output once at one element size; the split into reads and writes follows
/// the element counts of its input and output shapes. Fused reads are input_bytes + param_bytes
/// and fused writes output_bytes where the response has them.
TrafficBreakdown trafficBreakdown(const AnalyzeResult& analyze);

class TrafficCanvas;

class TrafficChart
    : public QWidget
    , public ExportableChart
{
    Q_OBJECT
public:
    explicit TrafficChart(QWidget* parent = nullptr);
    ~TrafficChart() override;

    /// The worker's `analyze` response for one task; clears the measured data (set it after).
    void setAnalysis(const AnalyzeResult& analyze);
    /// The worker's `profile` response for the same task (ops with index, op, time_ns, kernels)
    /// and the bandwidth to convert time into bytes, with its origin ("measured copy",
    /// "theoretical"). Profile ops are matched to analysed ops by index where the op names agree,
    /// otherwise by the order of ops of the same name. An empty profile clears the measured data.
    void setMeasured(const ProfileResult& profile, double bandwidthGBps, const QString& bandwidthOrigin);
    void clearMeasured();
    /// The GPU whose HBM bandwidth turns bytes into time: its name and bandwidth (GB/s) with where
    /// the number comes from ("datasheet", "measured"). No positive bandwidth: no times.
    void setGpu(const QString& name, double bandwidthGBps, const QString& origin);
    double gpuBandwidthGBps() const { return m_gpuGBps; }
    QString gpuName() const { return m_gpuName; }
    /// "5.74 GB → 1.20 ms": bytes and the least time moving them takes at the GPU's bandwidth;
    /// the bytes alone without a GPU.
    QString bytesAsTime(double bytes) const;
    /// The line under the summary: the totals as time at the GPU's bandwidth ("At 4.80 TB/s
    /// (NVIDIA H200 SXM 141GB, datasheet) …"); empty without a GPU or a drawable analysis.
    QString timeSummaryText() const;

    const TrafficBreakdown& breakdown() const { return m_breakdown; }
    bool hasMeasured() const { return m_bandwidthGBps > 0; }
    double bandwidthGBps() const { return m_bandwidthGBps; }
    /// Measured time of profile ops that match no analysed op (launched outside any op, or ops
    /// the analysis does not list), in ns.
    double unmatchedMeasuredNs() const { return m_unmatchedNs; }
    /// Bytes the op's measured time moves at the bandwidth; nullopt without a measurement.
    std::optional<double> impliedBytes(int opPosition) const;
    /// Positions of the three totals drawn left of the chain (opToolTip() and the canvas).
    static constexpr int kOneKernel = -1, kUnfusedTotal = -3, kLibraryEpilogue = -4;
    /// The tooltip of the op at this position in breakdown().ops, or of a total (kOneKernel, …).
    QString opToolTip(int opPosition) const;
    /// The one-line summary shown at the top ("unfused 5.74 GB, fused 1.58 GB: 3.64× …").
    QString summaryText() const;
    /// What the chart shows when it has nothing to draw ("" when it draws).
    QString emptyText() const;

    /// The bars as drawn now, in canvas coordinates (reads and writes together), by position
    /// (the totals first, kUnfusedTotal, kLibraryEpilogue, kOneKernel, then the ops 0, 1, …).
    QList<QPair<int, QRectF>> drawnBars() const;
    /// The canvas's visible part, in canvas coordinates.
    QRect visibleCanvasRect() const;

    QSize exportSize() const override;
    void renderExport(QPainter* painter, const QRectF& target) override;

private:
    friend class TrafficCanvas;
    /// The tooltip's line for bytes at the GPU's bandwidth; empty without a GPU.
    QString gpuTimeLine(double bytes) const;
    TrafficBreakdown m_breakdown;
    double m_bandwidthGBps = 0.0;
    QString m_bandwidthOrigin;
    QString m_gpuName, m_gpuOrigin;
    double m_gpuGBps = 0.0;
    double m_unmatchedNs = 0.0;
    QScrollArea* m_scroll = nullptr;
    TrafficCanvas* m_canvas = nullptr;
};

} // namespace kwb::app
