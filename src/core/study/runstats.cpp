#include "core/study/runstats.h"

#include "core/protocol/evaluationstatus.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace kwb {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Uniform in [0, n), without modulo bias, the same on every platform (std's distributions are
/// implementation-defined; the engine is not).
class IndexDraw
{
public:
    explicit IndexDraw(std::uint64_t seed)
        : m_engine(seed)
    {}
    std::size_t below(std::size_t n)
    {
        const std::uint64_t bound = n;
        const std::uint64_t threshold = (0 - bound) % bound; // 2^64 mod n
        for (;;) {
            const std::uint64_t r = m_engine();
            if (r >= threshold)
                return std::size_t(r % bound);
        }
    }

private:
    std::mt19937_64 m_engine;
};

/// Percentile of sorted values, linear between order statistics (Hyndman–Fan type 7).
double percentile(const std::vector<double>& sorted, double p)
{
    if (sorted.empty())
        return kNaN;
    const double h = (double(sorted.size()) - 1.0) * p;
    const std::size_t lo = std::size_t(std::floor(h));
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (h - double(lo)) * (sorted[hi] - sorted[lo]);
}

/// The point value with the percentile interval of the finite replicate values.
Estimate interval(double value, std::vector<double> replicates, double confidence)
{
    replicates.erase(std::remove_if(replicates.begin(), replicates.end(), [](double v) { return !std::isfinite(v); }),
                     replicates.end());
    std::sort(replicates.begin(), replicates.end());
    const double alpha = 1.0 - confidence;
    Estimate estimate;
    estimate.value = value;
    if (!std::isfinite(value) || replicates.empty()) {
        estimate.low = estimate.high = std::isfinite(value) ? value : kNaN;
        return estimate;
    }
    estimate.low = percentile(replicates, alpha / 2.0);
    estimate.high = percentile(replicates, 1.0 - alpha / 2.0);
    return estimate;
}

/// A percentage of `tasks` tasks, `count` of them counted: the bootstrap interval of the
/// replicates, or, where all or none are counted (the bootstrap's has no width), the exact
/// binomial one (runstats.h, Estimate).
Estimate proportion(int count, int tasks, std::vector<double> replicates, double confidence)
{
    Estimate estimate = interval(tasks > 0 ? 100.0 * count / tasks : kNaN, std::move(replicates), confidence);
    if (tasks > 0 && (count == 0 || count == tasks)) {
        const double edge = std::pow((1.0 - confidence) / 2.0, 1.0 / tasks);
        estimate.low = count == 0 ? 0.0 : 100.0 * edge;
        estimate.high = count == 0 ? 100.0 * (1.0 - edge) : 100.0;
        estimate.exactBinomial = true;
    }
    return estimate;
}

/// P(X <= k) for X ~ Binomial(n, p), summed in log space (n up to a few hundred tasks).
double binomialCdf(int k, int n, double p)
{
    if (k < 0)
        return 0.0;
    if (k >= n || p <= 0.0)
        return 1.0;
    if (p >= 1.0)
        return 0.0;
    double sum = 0.0;
    for (int i = 0; i <= k; ++i)
        sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) + i * std::log(p) +
                        (n - i) * std::log1p(-p));
    return std::min(sum, 1.0);
}

/// The p in [0, 1] where the decreasing f(p) crosses `target` (bisection to double precision).
template <typename F>
double crossing(F f, double target)
{
    double lo = 0.0, hi = 1.0;
    for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
        const double mid = 0.5 * (lo + hi);
        (f(mid) > target ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

/// A share of tasks, `count` of `tasks`, with the exact binomial (Clopper–Pearson) interval: the
/// one method for every such column (issue 38 item 4). At 10–100 tasks a bootstrap percentile
/// interval of a count is too narrow (no width at all at 0 % and 100 %) and steps by whole
/// resampled tasks; Clopper–Pearson holds its 95 % coverage at every size.
Estimate clopperPearson(int count, int tasks, double confidence)
{
    Estimate e;
    if (tasks <= 0) {
        e.value = e.low = e.high = kNaN;
        return e;
    }
    const double a = (1.0 - confidence) / 2.0;
    e.value = 100.0 * count / tasks;
    // Lower: P(X >= count | p) = a, i.e. P(X <= count - 1 | p) = 1 - a; upper: P(X <= count | p) = a.
    // At all or none the closed forms, exact to the last digit: a^(1/n) and 1 − a^(1/n).
    const double edge = std::pow(a, 1.0 / tasks);
    e.low = count == 0       ? 0.0
            : count == tasks ? 100.0 * edge
                             : 100.0 * crossing([&](double p) { return binomialCdf(count - 1, tasks, p); }, 1.0 - a);
    e.high = count == tasks ? 100.0
             : count == 0   ? 100.0 * (1.0 - edge)
                            : 100.0 * crossing([&](double p) { return binomialCdf(count, tasks, p); }, a);
    e.exactBinomial = true;
    return e;
}

/// Sums over a multiset of tasks; the same code serves the point estimate and every resample.
struct Tally
{
    int tasks = 0;
    int correct = 0;
    int fast1 = 0;
    int clearFast1 = 0;
    int clearFast1Undecided = 0;
    int timedCorrect = 0;
    int timedWithInterval = 0;
    int compiled = 0;
    double logSum = 0.0;
    int logCount = 0;
    double sum = 0.0;
    double best = kNaN;
    int torchOnlyCorrect = 0;
    double boundLogSum = 0.0;
    int boundCount = 0;

    void add(const TaskOutcome& outcome)
    {
        ++tasks;
        if (outcome.correct()) {
            ++correct;
            if (std::isfinite(outcome.boundFraction) && outcome.boundFraction > 0.0) {
                boundLogSum += std::log(outcome.boundFraction);
                ++boundCount;
            }
            if (outcome.torchOnly)
                ++torchOnlyCorrect;
            if (std::isfinite(outcome.speedup) && outcome.speedup > 0.0) {
                ++timedCorrect;
                timedWithInterval += std::isfinite(outcome.speedupLow) && std::isfinite(outcome.speedupHigh);
                logSum += std::log(outcome.speedup);
                sum += outcome.speedup;
                best = std::isfinite(best) ? std::max(best, outcome.speedup) : outcome.speedup;
                ++logCount;
            }
        }
        if (outcome.fast1())
            ++fast1;
        if (outcome.clearlyFastP(1.0))
            ++clearFast1;
        else if (outcome.fast1() && !(std::isfinite(outcome.speedupLow) && std::isfinite(outcome.speedupHigh)))
            ++clearFast1Undecided;
        if (outcome.compiled)
            ++compiled;
    }
    double pct(int count) const { return tasks > 0 ? 100.0 * count / tasks : kNaN; }
    double geomean() const { return logCount > 0 ? std::exp(logSum / logCount) : kNaN; }
    double mean() const { return logCount > 0 ? sum / logCount : kNaN; }
};

double logChoose(int n, int k)
{
    return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
}

} // namespace

bool TaskOutcome::correct() const
{
    return evaluationStatusFromWire(status) == EvaluationStatus::Correct && !belowRooflineFloor;
}

bool TaskOutcome::fast1() const
{
    return correct() && std::isfinite(speedup) && speedup > 1.0;
}

bool TaskOutcome::fastP(double p) const
{
    return correct() && std::isfinite(speedup) && speedup > p;
}

bool TaskOutcome::clearlyFastP(double p) const
{
    return fastP(p) && std::isfinite(speedupLow) && speedupLow > p;
}

bool Estimate::isValid() const
{
    return std::isfinite(value);
}

bool Estimate::hasInterval() const
{
    return isValid() && std::isfinite(low) && std::isfinite(high);
}

Metrics computeMetrics(const QList<TaskOutcome>& outcomes, const BootstrapOptions& options)
{
    Tally point;
    for (const TaskOutcome& outcome : outcomes)
        point.add(outcome);

    // The shares of tasks have exact intervals (clopperPearson); only the geometric mean is
    // resampled.
    std::vector<double> geomean;
    const std::size_t n = std::size_t(outcomes.size());
    if (n > 0 && options.resamples > 0) {
        IndexDraw draw(options.seed);
        geomean.reserve(std::size_t(options.resamples));
        for (int r = 0; r < options.resamples; ++r) {
            Tally tally;
            for (std::size_t i = 0; i < n; ++i)
                tally.add(outcomes.at(qsizetype(draw.below(n))));
            geomean.push_back(tally.geomean());
        }
    }

    Metrics metrics;
    metrics.tasks = point.tasks;
    metrics.correct = point.correct;
    metrics.fast1 = point.fast1;
    metrics.clearFast1 = point.clearFast1;
    metrics.clearFast1Undecided = point.clearFast1Undecided;
    metrics.timedCorrect = point.timedCorrect;
    metrics.timedWithInterval = point.timedWithInterval;
    metrics.compiled = point.compiled;
    metrics.geomeanCount = point.logCount;
    metrics.meanSpeedup = point.mean();
    metrics.bestSpeedup = point.best;
    metrics.torchOnlyCorrect = point.torchOnlyCorrect;
    metrics.boundFractionCount = point.boundCount;
    metrics.boundFractionGeomean = point.boundCount > 0 ? std::exp(point.boundLogSum / point.boundCount) : kNaN;
    metrics.correctPct = clopperPearson(point.correct, point.tasks, options.confidence);
    metrics.fast1Pct = clopperPearson(point.fast1, point.tasks, options.confidence);
    metrics.clearFast1Pct = clopperPearson(point.clearFast1, point.tasks, options.confidence);
    metrics.compiledPct = clopperPearson(point.compiled, point.tasks, options.confidence);
    metrics.geomeanSpeedup = interval(point.geomean(), std::move(geomean), options.confidence);
    if (point.logCount < 2) // one kernel: every resample that holds it gives its own speed-up
        metrics.geomeanSpeedup.low = metrics.geomeanSpeedup.high = kNaN;
    return metrics;
}

RunSummary summarize(const QList<TaskOutcome>& outcomes, const BootstrapOptions& options)
{
    RunSummary summary;
    summary.overall = computeMetrics(outcomes, options);
    QMap<int, QList<TaskOutcome>> byLevel;
    for (const TaskOutcome& outcome : outcomes)
        byLevel[outcome.level].append(outcome);
    for (auto it = byLevel.cbegin(); it != byLevel.cend(); ++it)
        summary.perLevel.insert(it.key(), computeMetrics(it.value(), options));
    return summary;
}

PairedComparison comparePaired(const QList<TaskOutcome>& a, const QList<TaskOutcome>& b,
                               const BootstrapOptions& options)
{
    PairedComparison comparison;
    QMap<QString, bool> correctA, correctB;
    for (const TaskOutcome& outcome : a)
        correctA.insert(outcome.task, outcome.correct());
    for (const TaskOutcome& outcome : b)
        correctB.insert(outcome.task, outcome.correct());

    // Sorted by task (QMap order), so the resamples do not depend on the order of the input.
    std::vector<std::pair<bool, bool>> pairs;
    for (auto it = correctA.cbegin(); it != correctA.cend(); ++it) {
        const auto other = correctB.constFind(it.key());
        if (other == correctB.cend()) {
            comparison.missingInB.append(it.key());
            continue;
        }
        pairs.emplace_back(it.value(), other.value());
    }
    for (auto it = correctB.cbegin(); it != correctB.cend(); ++it) {
        if (!correctA.contains(it.key()))
            comparison.missingInA.append(it.key());
    }

    int correctCountA = 0, correctCountB = 0;
    for (const auto& [inA, inB] : pairs) {
        correctCountA += inA;
        correctCountB += inB;
        if (inA && inB)
            ++comparison.both;
        else if (inA)
            ++comparison.onlyA;
        else if (inB)
            ++comparison.onlyB;
        else
            ++comparison.neither;
    }
    const std::size_t n = pairs.size();
    comparison.tasks = int(n);

    std::vector<double> difference;
    if (n > 0 && options.resamples > 0) {
        IndexDraw draw(options.seed);
        for (int r = 0; r < options.resamples; ++r) {
            int countA = 0, countB = 0;
            for (std::size_t i = 0; i < n; ++i) {
                const auto& pair = pairs[draw.below(n)];
                countA += pair.first;
                countB += pair.second;
            }
            difference.push_back(100.0 * (countA - countB) / double(n));
        }
    }
    const double pointA = n > 0 ? 100.0 * correctCountA / double(n) : kNaN;
    const double pointB = n > 0 ? 100.0 * correctCountB / double(n) : kNaN;
    comparison.correctPctA = clopperPearson(correctCountA, int(n), options.confidence);
    comparison.correctPctB = clopperPearson(correctCountB, int(n), options.confidence);
    comparison.differencePct = interval(pointA - pointB, std::move(difference), options.confidence);
    // Where every paired resample gives the same difference the bootstrap's interval has no width:
    // no discordant task (0 points), or every task won by one side (±100). The difference is the
    // share of tasks A wins less the share B wins; from the exact binomial bounds of those shares
    // (edge = (α/2)^(1/n)): with none discordant, ±(1 − edge) (±31 points for 10 tasks); with all
    // won by A, at least edge − (1 − edge) (B's share is at most what A's leaves).
    if (n > 0) {
        const double edge = std::pow((1.0 - options.confidence) / 2.0, 1.0 / double(n));
        const int nn = int(n);
        Estimate& d = comparison.differencePct;
        if (comparison.onlyA + comparison.onlyB == 0) {
            d.low = -100.0 * (1.0 - edge);
            d.high = 100.0 * (1.0 - edge);
            d.exactBinomial = true;
        } else if (comparison.onlyA == nn || comparison.onlyB == nn) {
            const double sign = comparison.onlyA == nn ? 1.0 : -1.0;
            d.low = sign > 0 ? 100.0 * (2.0 * edge - 1.0) : -100.0;
            d.high = sign > 0 ? 100.0 : -100.0 * (2.0 * edge - 1.0);
            d.exactBinomial = true;
        }
    }

    // Under "no difference" each discordant task is A's or B's with probability 1/2.
    const int discordant = comparison.onlyA + comparison.onlyB;
    if (discordant > 0) {
        const int smaller = std::min(comparison.onlyA, comparison.onlyB);
        double tail = 0.0;
        for (int i = 0; i <= smaller; ++i)
            tail += std::exp(logChoose(discordant, i) - discordant * std::log(2.0));
        comparison.signTestP = std::min(1.0, 2.0 * tail);
    }
    return comparison;
}

double passAtN(int k, int c, int n)
{
    if (n < 1 || n > k || c < 0 || c > k)
        return kNaN;
    if (k - c < n)
        return 1.0; // every n-subset holds a correct sample
    // 1 − C(k−c, n)/C(k, n) = 1 − Π_{i=k−c+1}^{k} (1 − n/i), without large binomials.
    double allWrong = 1.0;
    for (int i = k - c + 1; i <= k; ++i)
        allWrong *= 1.0 - double(n) / double(i);
    return 1.0 - allWrong;
}

QList<BestOfNPoint> bestOfNCurve(const QList<SampleOutcomes>& tasks, const QList<int>& ns,
                                 const BootstrapOptions& options)
{
    // pass@n of one task from k samples, c of them correct; a task with k < n samples is padded to
    // n with failures: it passes when one of its k is correct.
    const auto taskPass = [](int k, int c, int n) { return k < n ? (c > 0 ? 1.0 : 0.0) : passAtN(k, c, n); };
    QList<BestOfNPoint> curve;
    for (const int n : ns) {
        std::vector<double> values;
        int shortTasks = 0;
        for (const SampleOutcomes& task : tasks) {
            const int k = int(task.correct.size());
            const int c = int(std::count(task.correct.cbegin(), task.correct.cend(), true));
            shortTasks += k < n;
            values.push_back(taskPass(k, c, n));
        }
        BestOfNPoint point;
        point.n = n;
        point.shortTasks = shortTasks;
        point.tasks = int(values.size());
        double sum = 0.0;
        for (double v : values)
            sum += v;
        const double mean = values.empty() ? kNaN : 100.0 * sum / double(values.size());

        // Two stages, since each task's pass@n is itself estimated from its k samples: the tasks
        // drawn with replacement, then each drawn task's k samples drawn with replacement and its
        // pass@n computed again. Over tasks alone, tasks alike (two at 2 of 4) gave an interval of
        // no width, as if k samples measured a task's chance exactly.
        std::vector<double> replicates;
        if (!values.empty() && options.resamples > 0) {
            IndexDraw draw(options.seed);
            const std::size_t t = std::size_t(tasks.size());
            for (int r = 0; r < options.resamples; ++r) {
                double resampled = 0.0;
                for (std::size_t i = 0; i < t; ++i) {
                    const SampleOutcomes& task = tasks.at(qsizetype(draw.below(t)));
                    const int k = int(task.correct.size());
                    int c = 0;
                    for (int j = 0; j < k; ++j)
                        c += task.correct.at(qsizetype(draw.below(std::size_t(k))));
                    resampled += taskPass(k, c, n);
                }
                replicates.push_back(100.0 * resampled / double(t));
            }
        }
        // Every task's pass@n 0 (or every one 1): a proportion at its edge, as in computeMetrics.
        const bool none = std::all_of(values.cbegin(), values.cend(), [](double v) { return v == 0.0; });
        const bool all = std::all_of(values.cbegin(), values.cend(), [](double v) { return v == 1.0; });
        point.passPct = none || all ? proportion(none ? 0 : int(values.size()), int(values.size()),
                                                 std::move(replicates), options.confidence)
                                    : interval(mean, std::move(replicates), options.confidence);
        curve.append(point);
    }
    return curve;
}

RoutingEstimate estimateRouting(const QMap<QString, QList<TaskOutcome>>& runsByRegime,
                                const QMap<int, QString>& regimeForLevel, const BootstrapOptions& options)
{
    RoutingEstimate estimate;
    estimate.routing = regimeForLevel;
    QList<TaskOutcome> picked;
    for (auto it = regimeForLevel.cbegin(); it != regimeForLevel.cend(); ++it) {
        const auto run = runsByRegime.constFind(it.value());
        if (run == runsByRegime.cend()) {
            estimate.problems.append(
                QStringLiteral("level %1 is routed to %2, which has no run").arg(it.key()).arg(it.value()));
            continue;
        }
        QList<TaskOutcome> level;
        for (const TaskOutcome& outcome : run.value()) {
            if (outcome.level == it.key())
                level.append(outcome);
        }
        if (level.isEmpty()) {
            estimate.problems.append(
                QStringLiteral("the %1 run has no tasks of level %2").arg(it.value()).arg(it.key()));
            continue;
        }
        estimate.perLevel.insert(it.key(), computeMetrics(level, options));
        picked.append(level);
    }
    estimate.combined = computeMetrics(picked, options);
    return estimate;
}

} // namespace kwb
