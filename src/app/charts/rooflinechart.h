#pragma once
// The roofline: arithmetic intensity (FLOP per HBM byte, x) against GFLOP/s (y), both
// logarithmic, under one GPU's roofs. The memory roof is the diagonal bandwidth × intensity, the
// FP32 roof the flat line that bounds fp32 kernels; tensor-core roofs are drawn dashed because
// they bound only kernels that run on tensor cores. Each task is placed twice: its eager
// reference and its best counted candidate, joined by an arrow (green when the candidate is
// faster). Measured times are drawn only against the roofs of the GPU they were measured on; for
// any other GPU each task is placed analytically, at the performance that GPU's roofs allow at
// its intensity (hollow markers on the roof; no measured time is rescaled). Each marker's
// intensity says which traffic model it uses (core/tasks/kernelbound.h). A candidate whose time
// is below the roofline floor (not counted anywhere) is drawn as a red star, with the reason.
// Hover a point for its numbers; click it to select its task (a ring on its markers and a label
// with its numbers), double-click it to activate the task. Past kDensePoints tasks (all 250 of
// KernelBench) the markers are drawn smaller and half transparent, so that clusters stay
// readable; task labels are drawn on demand (setLabelsShown), the ones that would overlap
// another left out until a zoom makes room.

#include "core/tasks/gputable.h"
#include "core/tasks/kernelbound.h"

#include <QChartView>
#include <QHash>
#include <QList>
#include <QPointF>
#include <QString>
#include <QStringList>

#include <optional>

class QGraphicsPathItem;
class QGraphicsRectItem;
class QGraphicsSimpleTextItem;
class QLogValueAxis;
class QScatterSeries;
class QXYSeries;

namespace kwb::app {

/// One kernel of a task's best candidate, placed by the work it did (core/tasks/kernelwork.h) at
/// its own time in the candidate's trace: drawn while its task is selected, and only against the
/// roofs of the GPU it ran on.
struct RooflineKernel
{
    QString label;          ///< "relu_bias_add"; "library kernels (2)" for the library's group
    QString ops;            ///< the task's ops it did: "relu, add"
    double intensity = 0.0; ///< FLOP/B of its work
    double gflops = 0.0;    ///< its FLOPs / its time
    IntensityBasis basis = IntensityBasis::OneKernel;
    bool custom = false;
    /// kernelWorkReading(): "memory-bound: 65 % of HBM bandwidth (…); no spills; 100 % occupancy".
    QString reading;
};

/// One task on the roofline. FLOPs are the task's (analyze's `flops`); GFLOP/s is FLOPs / time,
/// so reference and candidate GFLOP/s compare as their times do.
struct RooflinePoint
{
    QString task;                          ///< "L2/1"
    int level = 0;                         ///< 1, 2 or 3: the marker's shape
    double intensity = 0.0;                ///< FLOP/byte of the eager reference (analyze: intensity_unfused)
    double referenceGflops = 0.0;          ///< FLOPs / eager reference time
    std::optional<double> candidateGflops; ///< FLOPs / best correct candidate's time; empty: none
    /// FLOP/byte of the candidate where it moves fewer bytes than the reference (a fused kernel:
    /// analyze's intensity_fused); empty: the same as `intensity`.
    std::optional<double> candidateIntensity;
    QString detail; ///< one more tooltip line (regime, speedup, status…); may be empty
    /// The GPU the times were measured on (DeviceFacts::name); measured markers are drawn only
    /// against roofs of that name.
    QString measuredOn;
    /// Which traffic model candidateX() is (EagerUnfused where candidateIntensity is empty).
    IntensityBasis candidateBasis = IntensityBasis::EagerUnfused;
    /// The task's one-kernel intensity (its bound, core taskBound()); 0: unknown.
    double oneKernelIntensity = 0.0;
    /// The fastest candidate with status correct that does not count (below the roofline floor),
    /// when it is faster than the counted one: its GFLOP/s and why it is not counted.
    std::optional<double> notCountedGflops;
    QString notCountedWhy;
    /// HBM bytes a profile of the best candidate measured on `measuredOn` (CUPTI's DRAM counters,
    /// the evaluation's `traffic`), and FLOPs / those bytes; empty: not profiled.
    std::optional<double> candidateMeasuredBytes;
    std::optional<double> candidateMeasuredIntensity;

    /// The best candidate's kernels, each placed by its work (issue 40); kernelsWhy says why there
    /// are none where the candidate was traced but its kernels cannot be matched to the task's ops.
    QList<RooflineKernel> kernels;
    QString kernelsWhy;

    double candidateX() const { return candidateIntensity.value_or(intensity); }

    /// Where the best candidate is placed, and by which intensity: at its measured traffic where a
    /// profile exists and the chart draws the GPU it was measured on (`onMeasuringGpu`); otherwise
    /// at the analytic model its kernels imply (on another GPU's roofs every marker is analytic).
    struct Placement
    {
        double intensity = 0;
        IntensityBasis basis = IntensityBasis::EagerUnfused;
    };
    Placement candidatePlacement(bool onMeasuringGpu) const
    {
        if (onMeasuringGpu && candidateMeasuredIntensity)
            return {*candidateMeasuredIntensity, IntensityBasis::Measured};
        return {candidateX(), candidateIntensity ? candidateBasis : IntensityBasis::EagerUnfused};
    }
};

/// One marker as the chart places it: the chart's model, for tests and tooltips.
struct RooflineMarker
{
    enum class Role { Reference, Candidate, NotCounted, Kernel };
    int point = -1; ///< index into RooflineChart::points()
    Role role = Role::Reference;
    IntensityBasis basis = IntensityBasis::EagerUnfused;
    bool measured = true; ///< a measured time on its own GPU; false: analytic (attainable on these roofs)
    QPointF at;           ///< data coordinates (FLOP/B, GFLOP/s)
    int kernel = -1;      ///< Role::Kernel: index into the point's kernels
};

class RooflineChart : public QChartView
{
    Q_OBJECT
public:
    /// From this many tasks on, markers are small and half transparent.
    static constexpr int kDensePoints = 60;

    explicit RooflineChart(QWidget* parent = nullptr);
    ~RooflineChart() override;

    /// Redraws every roof and ridge point for these roofs; the points stay.
    void setRoofs(const GpuRoofs& roofs);
    const GpuRoofs& roofs() const { return m_roofs; }
    /// Places these tasks (points without a positive intensity or reference GFLOP/s are left out,
    /// and counted by skippedPoints()).
    void setPoints(const QList<RooflinePoint>& points);
    const QList<RooflinePoint>& points() const { return m_points; }

    /// Zooms by `factor` (> 1 in, < 1 out) about a point of the viewport, as the wheel does.
    void zoomAt(const QPointF& viewportPos, double factor);
    /// Back to every point and roof in view.
    void resetZoom();
    bool isZoomed() const;
    int skippedPoints() const { return m_skipped; }

    /// The tooltip text of a point (index into points()), for its reference or its candidate.
    QString toolTipText(int pointIndex, bool candidate) const;
    /// Where a point's marker is, in viewport coordinates (for tests and for pointing at a task).
    QPoint viewportPosition(int pointIndex, bool candidate) const;
    /// The arrows as drawn: (reference, candidate) in data coordinates, one per point with a
    /// candidate, in points() order.
    QList<QPair<QPointF, QPointF>> arrows() const;
    /// The text shown when there is nothing to place ("" when there are points).
    QString emptyText() const;
    /// Every marker drawn, in series order.
    const QList<RooflineMarker>& markers() const { return m_markers; }
    /// Whether points measured on `gpu` are drawn as measured against the current roofs.
    bool drawsMeasured(const QString& gpu) const { return !gpu.isEmpty() && gpu == m_roofs.name; }
    /// The tooltip of a marker (index into markers()).
    QString markerToolTip(int marker) const;
    /// The marker under a viewport position (within its size), or -1.
    int markerAt(const QPoint& viewportPos) const;
    /// The note on how the markers are placed (names the GPU the times come from).
    QString placementNote() const;

    /// Whether the markers are drawn dense (kDensePoints or more tasks).
    bool isDense() const { return m_points.size() >= kDensePoints; }
    /// The size markers are drawn at now (pixels).
    qreal markerSize() const;

    /// Task labels next to each task's reference marker; labels that would overlap one already
    /// placed (or leave the plot) are not drawn until a zoom makes room.
    void setLabelsShown(bool shown);
    bool labelsShown() const { return m_labelsShown; }
    /// The labels drawn now: task and its rectangle in viewport coordinates.
    QList<QPair<QString, QRect>> shownLabels() const;

    /// Selects a task (rings its markers, labels it with its numbers); an empty or unplaced task
    /// clears the selection. Emits taskSelected when the selection changes.
    void selectTask(const QString& task);
    QString selectedTask() const { return m_selected; }
    /// The selected task in words: its reference and best candidate with GFLOP/s, intensity and
    /// traffic model, the speed-up over the reference; empty when nothing is selected.
    QString selectionText() const;
    /// selectionText() line by line (the label on the chart).
    QStringList selectionLines() const;
    /// Selects one kernel of the selected task (index into its point's kernels; -1: none): its
    /// reading joins the selection's lines. Emits kernelSelected.
    void selectKernel(int kernel);
    int selectedKernel() const { return m_selectedKernel; }
    /// The selected kernel's one line: "relu_bias_add (relu, add): memory-bound: …"; empty if none.
    QString kernelReadingText() const;
    /// The selection's ring and label as drawn, in viewport coordinates (empty when hidden).
    QList<QRect> selectionRings() const;
    QRect selectionLabelRect() const;

    /// The roof the chart uses to rate a kernel: min(bandwidth × intensity, FP32 peak).
    double attainableGflops(double intensity) const { return m_roofs.attainableGflops(intensity); }

protected:
    bool viewportEvent(QEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;

Q_SIGNALS:
    /// A point was double-clicked (reference or candidate).
    void taskActivated(const QString& task);
    /// The selection changed (empty: none).
    void taskSelected(const QString& task);
    /// A kernel marker of the selected task was clicked (-1: the kernel selection was cleared).
    void kernelSelected(const QString& task, int kernel);

private:
    struct PointRef
    {
        int index = -1;
        bool candidate = false;
        int marker = -1;
    };
    struct RoofLabel
    {
        QGraphicsSimpleTextItem* item = nullptr;
        QPointF anchor; ///< data coordinates
        bool alongDiagonal = false;
        bool alignRight = false;
    };

    void rebuild();
    void rebuildRoofs();
    void buildMarkers();
    void rebuildPoints();
    void updateRanges();
    void relayoutOverlay();
    void clearOverlay();
    PointRef pointAt(QXYSeries* series, const QPointF& value) const;
    void onPointHovered(QXYSeries* series, const QPointF& value, bool state);
    void rebuildSelection();
    void rebuildKernelMarkers();
    QString roofToolTip(const Roof& roof) const;

    GpuRoofs m_roofs;
    QList<RooflinePoint> m_points;
    int m_skipped = 0;
    QPoint m_pressPos; ///< where the left button went down: a click or the start of a zoom rectangle
    QLogValueAxis* m_axisX = nullptr;
    QLogValueAxis* m_axisY = nullptr;
    double m_xMin = 0.01, m_xMax = 1000.0, m_yMin = 1.0, m_yMax = 1e6;
    QHash<QXYSeries*, QList<PointRef>> m_seriesPoints;
    QList<RooflineMarker> m_markers;
    QHash<QXYSeries*, QList<int>> m_seriesMarkers; ///< series -> marker indices
    QHash<QXYSeries*, Roof> m_roofSeries;
    QList<RoofLabel> m_roofLabels;
    QList<QGraphicsPathItem*> m_arrowItems;
    QList<int> m_arrowPoints;                   ///< point index of each arrow item
    QList<QPair<QPointF, QPointF>> m_arrowEnds; ///< data coordinates of each arrow
    QGraphicsSimpleTextItem* m_emptyItem = nullptr;
    QGraphicsSimpleTextItem* m_noteItem = nullptr; ///< names the dotted (theoretical) roofs
    bool m_labelsShown = false;
    QList<QGraphicsSimpleTextItem*> m_pointLabels; ///< one per point, in points() order
    QString m_selected;
    int m_selectedKernel = -1;
    int m_baseMarkers = 0;                    ///< markers before the selected task's kernel markers
    QScatterSeries* m_kernelSeries = nullptr; ///< the selected task's kernels
    QList<QGraphicsPathItem*> m_selectionRings;
    QList<int> m_selectionMarkers; ///< the marker each ring is around
    QGraphicsRectItem* m_selectionBox = nullptr;
    QGraphicsSimpleTextItem* m_selectionLabel = nullptr;
};

} // namespace kwb::app
