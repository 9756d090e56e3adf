#pragma once
// The Diff page's Kernels tab (issue 40): the compiled kernels of two candidates side by side.
// A kernel is chosen by name (kernels of the same name are paired; one only one side has is shown
// against nothing); its facts (core/protocol/kernelfacts.h: registers, spills, shared and
// constant memory, the block limit) in a table whose differing rows are highlighted, each side's
// one-line reading, and its SASS or PTX diffed line by line (changed lines marked as in the code
// diff). The facts are the worker's `compile.kernel_facts`, read from the cubin, and where a GPU
// ran the candidates its `launches` (the launch, its theoretical occupancy, its time): the view
// computes none of them.

#include "core/protocol/evaluationresult.h"
#include "core/protocol/kernelfacts.h"
#include "core/protocol/kernellaunches.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QTableWidget;

namespace kwb::app {

class SideBySideDiffView;

class KernelCompareView : public QWidget
{
    Q_OBJECT
public:
    explicit KernelCompareView(QWidget* parent = nullptr);

    /// Each side's kernels and the worker's note on what it could not read; each side's launches
    /// as the GPU ran them (the evaluation's `launches`; empty where it was not traced), which add
    /// the launch, its theoretical occupancy and its time to the facts table.
    void setKernels(const QList<KernelFactsInfo>& left, const QString& leftNote, const QList<KernelFactsInfo>& right,
                    const QString& rightNote, const QList<KernelLaunchConfig>& leftLaunches = {},
                    const QList<KernelLaunchConfig>& rightLaunches = {});
    void clear();
    /// Each side's measured HBM traffic per kernel (`traffic.per_kernel`; empty where not counted),
    /// a row of the facts table where either side has it. Call after setKernels.
    void setTraffic(const QList<KernelTraffic>& left, const QList<KernelTraffic>& right);

    /// The kernels offered, by symbol, in the chooser's order (the left's first).
    QStringList kernelNames() const { return m_names; }
    /// Shows kernel `name`; false where neither side has it.
    bool setCurrentKernel(const QString& name);
    QString currentKernel() const;
    /// SASS (true) or PTX (false) in the code diff; SASS by default where either side has it.
    void setShowSass(bool sass);
    bool showsSass() const;

    /// The fact rows whose values differ between the sides, by label.
    QStringList differingFacts() const;
    /// The tab's caption: "Kernels: 1 kernel, 3 facts differ", "Kernels: none".
    QString caption() const;

    QTableWidget* factsTable() const { return m_table; }
    SideBySideDiffView* codeDiff() const { return m_code; }
    QLabel* leftReading() const { return m_leftReading; }
    QLabel* rightReading() const { return m_rightReading; }
    QLabel* codeCaption() const { return m_codeCaption; }

Q_SIGNALS:
    void captionChanged(const QString& caption);

private:
    void showKernel();
    void showCode();

    QList<KernelFactsInfo> m_left, m_right;
    QList<KernelLaunchConfig> m_leftLaunches, m_rightLaunches;
    QList<KernelTraffic> m_leftTraffic, m_rightTraffic;
    QString m_leftNote, m_rightNote;
    QStringList m_names;
    QComboBox* m_chooser = nullptr;
    QComboBox* m_codeKind = nullptr;
    QLabel* m_note = nullptr;
    QLabel* m_leftReading = nullptr;
    QLabel* m_rightReading = nullptr;
    QTableWidget* m_table = nullptr;
    QLabel* m_codeCaption = nullptr;
    SideBySideDiffView* m_code = nullptr;
};

} // namespace kwb::app
