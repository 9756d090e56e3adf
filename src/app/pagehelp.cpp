#include "pagehelp.h"

#include <QCoreApplication>

namespace kwb::app {

namespace {
QString tr(const char* text)
{
    return QCoreApplication::translate("PageHelp", text);
}
} // namespace

QString pageHelpText(const QString& page)
{
    // docs/ paths are the repository's (README.md "The window" shows every page).
    if (page == QLatin1String("welcome"))
        return tr("<p><b>Welcome</b>: open a shipped example study: every regime over 30 tasks, evaluated on an H200 "
                  "with a fixture model server, not a language model; or five regimes on a real model's recorded "
                  "answers (Qwen3-Coder-480B, the same answer for every regime, so the regimes tie). Or open a run "
                  "database of your own, launch a run or browse the tasks. Help &gt; Welcome brings this page "
                  "back.</p>");
    if (page == QLatin1String("tasks"))
        return tr("<p><b>Tasks</b>: the KernelBench tasks by level, with search (id, title, op) and filters by level, "
                  "op category and bound (memory- or compute-bound on the GPU named above the figures, each with "
                  "its count; \"Ops not counted\" for tasks with an op the analyser cannot count, which show "
                  "\"cannot count\" instead of FLOPs and get no point on the roofline). For the selected task: "
                  "its shapes, the op chain, the reference code, FLOPs, HBM bytes, arithmetic intensity and the "
                  "roofline bounds on the "
                  "GPU named above the figures (this machine's, the open database's, or one from the GPU table), "
                  "and the eager reference's time where a run measured it (docs/task-format.md).</p>");
    if (page == QLatin1String("prompts"))
        return tr("<p><b>Prompts</b>: the prompt templates of a set, highlighted, with a live preview for a task and "
                  "role and errors inline. The shipped set is read-only; edits are saved as a new set, which can be "
                  "diffed against the shipped one. \"Compare with run\" marks each template against the wording a "
                  "run of the open database actually used (= the same, \u2260 other wording, \u2205 not used by "
                  "the run) (docs/prompts.md).</p>");
    if (page == QLatin1String("launch"))
        return tr("<p><b>Launch</b>: pick tasks, a regime or the routing, ablations, n, turns, temperature, the model "
                  "server (test its connection) and the protocol profile, then start, pause, cancel or queue runs. "
                  "Runs are written to the database shown on the page, never into a study you opened "
                  "(docs/cli.md).</p>");
    if (page == QLatin1String("monitor"))
        return tr("<p><b>Monitor</b>: the run running, or the one selected on Results. Per task its turns and samples "
                  "as they happen; for the selected sample the streamed model text, the compile log and the "
                  "evaluation in words (the worker's raw JSON behind a toggle) and, under \"Prompts sent\", every "
                  "prompt that sample's answer came from, each role and turn as it was sent; progress, time left "
                  "and the problems (failed requests, time-outs, crashed workers) in view.</p>");
    if (page == QLatin1String("results"))
        return tr("<p><b>Results</b>: check runs on the left to compare them. Table I per run with 95 % intervals "
                  "and where its answers came from: answered by (the model, or the project's fixture or recorded "
                  "server: then a banner above the pages says the numbers are not a live model's), endpoint, "
                  "answer format and prompt set, with versions and GPU in the run's tooltip. Below it, tabs: "
                  "Table II: per level (with the correct kernels' fraction of the roofline bound: the time at the "
                  "task's roofline floor over the measured time, 100 % at the bound); Per task, one level at a "
                  "time: each task's one best across the checked runs (the candidate the Roofline and the Diff "
                  "show) and the candidate each run kept, with its speed-up and fraction of the bound; paired "
                  "comparisons, the routing estimate, ablations and fast_p; and the evaluations no table counts, "
                  "with the reason. Export as CSV, JSON or Markdown, each with every run's provenance; "
                  "double-click a run to open it on the Monitor.</p>");
    if (page == QLatin1String("roofline"))
        return tr("<p><b>Roofline</b>: each task's eager reference and best counted candidate (arrow) at their "
                  "arithmetic intensity (FLOPs per HBM byte of the traffic model each marker names) and attained "
                  "GFLOP/s, under the chosen GPU's memory roof (diagonal) and compute roofs (flat). Drag a rectangle "
                  "or turn the wheel to zoom, right-click to zoom out, \"Reset zoom\" shows everything. Click a point "
                  "(or pick a task under Task) to select it: a ring on its markers, its numbers beside them and under "
                  "the chart, the best candidate's fraction of the roofline bound among them; double-click it or "
                  "\"Open task\" to open it. \"Label tasks\" names every task where the names fit (zoom in for the "
                  "rest); with many tasks the markers are small and half transparent. "
                  "The text under the chart says how to read what is drawn for that GPU (docs/roofline.md).</p>");
    if (page == QLatin1String("traffic"))
        return tr("<p><b>HBM traffic</b>: the bytes a task moves to and from HBM unfused (every op reads its inputs "
                  "and writes its output), with library ops and a fused epilogue, and as one kernel, side by side "
                  "with their ratios, and each as the least time those bytes take at the bandwidth of the GPU chosen "
                  "above (\"5.74 GB → 1.20 ms\"); right of them, the op chain, each op its own kernel, on its own "
                  "scale. Where one kernel is no real option (two or more matmul/conv ops, as in a whole network) it "
                  "is drawn hatched with a dashed outline and labelled bound: the least traffic any code could move, "
                  "not a kernel to write. \"Measure on this GPU\" adds each op's time measured with CUPTI "
                  "(docs/roofline.md).</p>");
    if (page == QLatin1String("bestofn"))
        return tr("<p><b>Best-of-n</b>: solid, the study's curve from sweep runs (the whole regime at each n, the "
                  "numbers of kwb report); dashed, first-turn pass@n (one of n first-turn samples correct), per level "
                  "and overall, for the runs checked on Results.</p>");
    if (page == QLatin1String("diff"))
        return tr("<p><b>Diff</b>: any two candidates of a task across runs, turns and samples (by default the best "
                  "and other code before it), the changes marked; under them each one's evaluation (status, logs) "
                  "and \"Prompts sent\", which diffs the prompts each was sent, every role and turn; \"Kernels\" "
                  "sets the two candidates' compiled kernels side by side (registers, spills, shared and constant "
                  "memory, the block limit, as the worker read them from the cubin; SASS or PTX diffed).</p>");
    return QString();
}

} // namespace kwb::app
