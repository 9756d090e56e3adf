#pragma once
// The study's metrics (Tables I–II of "Correct First, Fast Second") and the statistics that say
// how far to trust them: 95 % intervals (exact binomial for shares of tasks, bootstrap over tasks
// for the geometric mean), paired comparisons of two
// runs on the same tasks, the best-of-n curve and the routing estimate. Pure functions on value
// lists; which candidate of a task counts (selection per regime) is decided before this, and the
// report formats the numbers.
//
// Percentages are in percent (0–100). An estimate over no tasks is NaN (Estimate::isValid()).
// The bootstrap draws from std::mt19937_64 (fully specified by the standard) with its own
// unbiased index draw, so a seed gives the same intervals on every platform.

#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <limits>

namespace kwb {

/// The outcome of one task in one run: the status and speedup of the candidate selected for it.
struct TaskOutcome
{
    QString task;         ///< "L2/1"
    int level = 0;        ///< 1, 2 or 3
    QString status;       ///< "correct" counts as correct; anything else does not
    double speedup = 0.0; ///< reference time / candidate time; <= 0 or NaN when not timed
    bool compiled = false;
    /// The selected answer launches no kernel of its own (only torch's: EvaluationResult::torchOnly);
    /// a correct one ties the reference by calling it, as the study's "only tied by calling
    /// torch.matmul" answers did.
    bool torchOnly = false;
    /// The selected evaluation's time is below the roofline floor (EvaluationResult::
    /// belowRooflineFloor): not correct, not fast, whatever its status says.
    bool belowRooflineFloor = false;
    /// The selected candidate's fraction of the roofline bound (kernelbound.h's
    /// rooflineBoundFraction: time at the bound / measured time); NaN where it has none.
    double boundFraction = std::numeric_limits<double>::quiet_NaN();

    /// EvaluationResult::countsAsCorrect(): status "correct" and not below the roofline floor.
    bool correct() const;
    /// The 95 % interval of the speed-up (EvaluationResult::trustedSpeedupInterval); NaN without one.
    double speedupLow = std::numeric_limits<double>::quiet_NaN();
    double speedupHigh = std::numeric_limits<double>::quiet_NaN();

    /// KernelBench's fast_1: correct and strictly faster than the reference.
    bool fast1() const;
    /// KernelBench's fast_p: correct and a speed-up strictly above p (fast_0 is correct).
    bool fastP(double p) const;
    /// The "clear" fast_p: correct and the speed-up's interval lies wholly above p (its lower
    /// bound > p); a speed-up without an interval is never clearly fast.
    bool clearlyFastP(double p) const;
};

struct BootstrapOptions
{
    int resamples = 2000;
    std::uint64_t seed = 20261109;
    double confidence = 0.95;
};

/// A point estimate with its interval. A share of tasks (correct %, fast_1 %, clear fast_1 %,
/// compiled %, and each run's correct % of a paired comparison) always has the exact binomial
/// (Clopper–Pearson) interval, one method per column at every value (0–31 % for 0 of 10 tasks):
/// at 10–100 tasks a bootstrap's is too narrow, and has no width at 0 % and 100 %;
/// exactBinomial says so. The geometric-mean speed-up has the bootstrap percentile interval over
/// tasks (no exact method exists for it); one kernel has none (low, high NaN). A paired
/// difference and a best-of-n point have bootstrap intervals, exact binomial bounds only where
/// every resample is alike (comparePaired, bestOfNCurve say how).
struct Estimate
{
    double value = 0.0;
    double low = 0.0;
    double high = 0.0;
    bool exactBinomial = false;

    bool isValid() const;
    /// Whether low and high are set (a valid estimate of one kernel's speed-up has none).
    bool hasInterval() const;
};

struct Metrics
{
    int tasks = 0;
    int correct = 0; ///< "solved" in the study's per-level column
    int fast1 = 0;
    /// Correct with the speed-up's 95 % interval wholly above 1 (TaskOutcome::clearlyFastP(1)): the
    /// headline, where plain fast_1 counts a 1.002× that noise could have made.
    int clearFast1 = 0;
    /// fast_1 tasks whose speed-up has no interval (results from before intervals were kept): for
    /// them "clearly" cannot be decided, so clear fast_1 is not measured where this is not 0.
    int clearFast1Undecided = 0;
    /// Correct tasks with a timed speed-up, and how many of them have its interval: where none has
    /// (a run from before intervals were kept), no "clear" share was measured at all.
    int timedCorrect = 0;
    int timedWithInterval = 0;
    /// Whether clear fast_1 was measured: no fast task without an interval, and intervals kept.
    bool clearFast1Measured() const
    {
        return clearFast1Undecided == 0 && !(timedCorrect > 0 && timedWithInterval == 0);
    }
    int compiled = 0;
    Estimate correctPct;
    Estimate fast1Pct;      ///< over ALL tasks, not over the correct ones
    Estimate clearFast1Pct; ///< over ALL tasks
    Estimate compiledPct;
    /// Geometric mean of the speedups of correct kernels (those with a positive finite speedup);
    /// its interval comes from the resamples that hold at least one such kernel.
    Estimate geomeanSpeedup;
    int geomeanCount = 0; ///< correct kernels that entered the geometric mean
    /// The study's other two speed-up figures over the same kernels: their arithmetic mean and the
    /// best (NaN without one). Point values: the mean is pulled by one outlier, which is why the
    /// geometric mean with its interval is the headline.
    double meanSpeedup = std::numeric_limits<double>::quiet_NaN();
    double bestSpeedup = std::numeric_limits<double>::quiet_NaN();
    /// Correct tasks whose selected answer launches no kernel of its own (TaskOutcome::torchOnly).
    int torchOnlyCorrect = 0;
    /// Geometric mean of the correct tasks' fractions of the roofline bound (TaskOutcome::
    /// boundFraction), over those that have one (boundFractionCount); a point value, NaN without.
    double boundFractionGeomean = std::numeric_limits<double>::quiet_NaN();
    int boundFractionCount = 0;
};

struct RunSummary
{
    Metrics overall;
    QMap<int, Metrics> perLevel; ///< level -> metrics over that level's tasks (resampled within it)
};

/// The metrics of one run, overall and per level.
RunSummary summarize(const QList<TaskOutcome>& outcomes, const BootstrapOptions& options = {});
/// The metrics of a set of tasks (no per-level split).
Metrics computeMetrics(const QList<TaskOutcome>& outcomes, const BootstrapOptions& options = {});

/// Run A against run B on the tasks they share.
struct PairedComparison
{
    int tasks = 0; ///< tasks in both runs
    int onlyA = 0; ///< correct in A, not in B
    int onlyB = 0;
    int both = 0;
    int neither = 0;
    Estimate correctPctA;
    Estimate correctPctB;
    /// correct % of A minus correct % of B (percentage points), with a paired bootstrap interval
    /// (the same resampled tasks on both sides); where every resample is alike (no discordant
    /// task, or every task won by one side) bounds from the exact binomial ones of the shares each
    /// side wins (exactBinomial; runstats.cpp says how).
    Estimate differencePct;
    /// Exact two-sided sign (McNemar) test on the discordant tasks: onlyA against onlyB.
    double signTestP = 1.0;
    QStringList missingInA; ///< tasks of B that A does not have
    QStringList missingInB;
};

PairedComparison comparePaired(const QList<TaskOutcome>& a, const QList<TaskOutcome>& b,
                               const BootstrapOptions& options = {});

/// For the best-of-n curve: one task's per-sample correctness (k independent samples).
struct SampleOutcomes
{
    QString task;
    int level = 0;
    QList<bool> correct;
};

/// The unbiased estimator of P(at least one correct among n of k samples, c of them correct):
/// 1 − C(k−c, n) / C(k, n). NaN when n > k or n < 1.
double passAtN(int k, int c, int n);

struct BestOfNPoint
{
    int n = 0;
    int tasks = 0;      ///< every task given (a task with no sample too)
    int shortTasks = 0; ///< tasks with fewer than n samples: their missing samples count as failures
    Estimate passPct;   ///< mean of pass@n over all tasks, in percent
};

/// The mean pass@n over every task. A task with k < n samples is not dropped: its n − k missing
/// samples count as failures (pass@n = 1 when one of its k is correct, else 0), as a task without
/// an evaluation counts as a failure everywhere else. The interval is a two-stage bootstrap: tasks
/// drawn with replacement, then each drawn task's samples (each pass@n is itself estimated from k
/// samples); at 0 % and 100 % the exact binomial one over tasks (Estimate).
QList<BestOfNPoint> bestOfNCurve(const QList<SampleOutcomes>& tasks, const QList<int>& ns = {1, 2, 4, 8},
                                 const BootstrapOptions& options = {});

/// Routing: each level's tasks are taken from the run of the regime chosen for that level.
struct RoutingEstimate
{
    QMap<int, QString> routing; ///< level -> regime, as given
    Metrics combined;           ///< over the tasks the routing picked
    QMap<int, Metrics> perLevel;
    QStringList problems; ///< a level routed to a regime without a run, a level with no tasks
};

RoutingEstimate estimateRouting(const QMap<QString, QList<TaskOutcome>>& runsByRegime,
                                const QMap<int, QString>& regimeForLevel, const BootstrapOptions& options = {});

} // namespace kwb
