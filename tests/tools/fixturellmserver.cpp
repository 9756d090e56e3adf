// kwb-fixture-llm: an OpenAI-compatible test server that answers like a weak but improving model,
// with the project's own candidate fixtures, so a whole study (every regime, 30 tasks) can run
// end to end on a GPU without a model. Built on the tests' ScriptedLlmServer (127.0.0.1 only).
//
// How it answers a chat request (the prompts are this project's templates, prompts/):
// - An answer request ("... answer for task L2/1 ...", every generator and retry template of the
//   native sets ends so; a KernelBench-format generator prompt, which names no task as KernelBench's
//   own does not, says "Name your optimized architecture ModelNew" (the contract partial) and holds
//   the task's KernelBench problem file: the task whose
//   file it holds, from the --tasks folder's `source` lines and kernelbench-src/)
//   gets, for the k-th answer the server has given for that task (k = 0, 1, ...; a request for n
//   choices takes n numbers):
//     k >= need(task): the task's reference candidate (tests/fixtures/candidates/reference);
//     k <  need(task): a failing candidate: a real failing fixture written for the task where one
//                      exists (failing/, manifest task), otherwise the reference broken in one of
//                      three ways (a compile error, a 1 % error in the result, an untagged block).
//   need(task) is a stable hash of the task id and --seed, from 0 to --max-need (default 4): the
//   task needs that many failed tries before a right one, so more samples and more turns solve more
//   tasks, as the study saw. Prompts in the pilot-v1 wording (which ask for tiled CUDA) need two more.
// - Any other request (analyzer, researcher, triager, critic) gets a short plain-text note.
// Restart the server (or change --seed) between runs: the per-task counters are its only state.
// With --stateless there is no counter: k is a draw from 0 to max-need + 2, a stable hash of the
// task, --seed, the request's seed (+ i for choice i) and the prompt, so an answer is a function
// of what was asked. Runs that ask alike get the same answers: the runs of a `kwb sweep` (paired
// seeds) draw the same first samples, and a sweep against one server needs no restart. Each
// answer is then right with chance (max-need + 3 - need) / (max-need + 3): more samples and more
// turns still solve more tasks.
//
// --answer-format kernelbench answers in KernelBench's format (a ```python block defining
// `class ModelNew(nn.Module)`; docs/candidate-format.md), with the same need() policy:
//   k >= need(task): the task's KernelBench twin (tests/fixtures/candidates/kernelbench/, the same
//                    CUDA as reference/ in load_inline) where one exists, otherwise an honest
//                    torch-only ModelNew written from the task file (--tasks DIR): the reference's
//                    forward, called with ModelNew's own parameters and buffers, registered under
//                    the reference's names and full-scale shapes (so at --scale smoke a task whose
//                    parameter shapes depend on a smoke dimension is a parameter_mismatch);
//   k <  need(task): the study's failure modes, in turn, applied to the twin (or, without one, to
//                    the torch-only ModelNew finished by a one-kernel load_inline copy, the same
//                    source for every task, so the extension cache builds it once): a load_inline
//                    keyword that does not exist (extra_cuda_flags: compile_error), a function
//                    called by another name than `functions` binds (runtime_error), and a ModelNew
//                    signature the task does not call: a constructor argument (for a task without
//                    init_inputs), else an extra forward argument (runtime_error).
//
// --recorded DIR answers with real model text instead (issue 33): the generations of a folder laid
// out as `kwb import kernelbench` reads it (docs/cli.md; found by the import's own rules,
// core/run/generationimport.h, and the task files of --tasks standing for the worker's list), so a
// whole regime runs on what a model wrote where no model is reachable. Per task, its answers in
// order: run folder by run folder (give DIR as one run folder to serve one model and method), then
// by sample; each the whole model response (`_response.txt`) where the folder kept one, else the
// module in a ```python fence, sent byte for byte (no placeholder is filled in). An answer request
// for a task gets its next answer (sample 0, 1, ..., wrapping; the counter is per task, so restart
// the server between runs); with --stateless, sample (request seed + i) mod count for choice i
// (seed 0 without one): kwb asks sample k with seed base + k, so the runs of a sweep get the same
// answers, but a retry (the same seed) gets the same answer again. A task with no generation in
// DIR gets a plain-text answer saying so, with no module: the run stores it as the model's failure
// (format_error), as it would a model that did not answer. Other roles (analyzer, researcher,
// triager, critic) get a fixed note that says it is one: nothing of theirs was recorded.
// --candidates, --seed, --max-need do not apply; the answers are in KernelBench's format (run kwb
// with --answer-format kernelbench).

#include "../unit/scriptedllmserver.h"
#include "core/run/generationimport.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QMap>
#include <QRegularExpression>
#include <QTextStream>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>

namespace {

using kwb::test::ScriptedLlmServer;

QString readText(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

/// "L2/1" -> "L2_01"
QString fileStem(const QString& task)
{
    const QStringList parts = task.mid(1).split(QLatin1Char('/'));
    if (parts.size() != 2)
        return {};
    return QStringLiteral("L%1_%2").arg(parts[0]).arg(parts[1].toInt(), 2, 10, QLatin1Char('0'));
}

/// The task of a KernelBench-format generator prompt: the one whose KernelBench problem file
/// (tasks/kernelbench-src/<source>) the prompt holds, the longest where one file holds another.
QString taskOfProblemFile(const QString& prompt, const QString& tasksDir)
{
    static QHash<QString, QList<QPair<QString, QString>>> byDir; // tasks dir -> (file text, id)
    auto& files = byDir[tasksDir];
    if (files.isEmpty()) {
        static const QRegularExpression idLine(QStringLiteral("(?m)^id = \"(L\\d+/\\d+)\"$"));
        static const QRegularExpression sourceLine(QStringLiteral("(?m)^source = \"([^\"]+)\"$"));
        for (const QString& level : QDir(tasksDir).entryList({QStringLiteral("level*")}, QDir::Dirs))
            for (const QFileInfo& f :
                 QDir(tasksDir + QLatin1Char('/') + level).entryInfoList({QStringLiteral("*.toml")}, QDir::Files)) {
                const QString toml = readText(f.filePath());
                const QString id = idLine.match(toml).captured(1);
                const QString source = sourceLine.match(toml).captured(1);
                const QString text = readText(tasksDir + QStringLiteral("/kernelbench-src/") + source).trimmed();
                if (!id.isEmpty() && !text.isEmpty())
                    files.append({text, id});
            }
        std::sort(files.begin(), files.end(),
                  [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    }
    for (const auto& [text, id] : files)
        if (prompt.contains(text))
            return id;
    return {};
}

int stableHash(const QString& text)
{
    const QByteArray d = QCryptographicHash::hash(text.toUtf8(), QCryptographicHash::Sha256);
    return int((quint8(d[0]) << 8) | quint8(d[1]));
}

/// The reference broken in a way that is typical of a weak model.
QString breakReference(const QString& reference, int kind)
{
    QString answer = reference;
    switch (kind % 3) {
    case 0: { // a compile error: in the cuda block if there is one, else in the host code
        const qsizetype cuda = answer.indexOf(QLatin1String("```cuda\n"));
        if (cuda >= 0) {
            answer.insert(cuda + 8, QStringLiteral("this line is not CUDA\n"));
        } else {
            const qsizetype ret = answer.lastIndexOf(QLatin1String("\n    return "));
            if (ret >= 0)
                answer.insert(ret, QStringLiteral("\n    y = undefined_helper(1)"));
        }
        return answer;
    }
    case 1: { // a wrong result: off by 1 %
        static const QRegularExpression lastReturn(
            QStringLiteral("\\n    return ([^\\n]+)\\n```(?![\\s\\S]*```python)"));
        const QRegularExpressionMatch m = lastReturn.match(answer);
        if (m.hasMatch()) {
            answer.replace(m.capturedStart(1), m.capturedLength(1), QStringLiteral("(%1) * 1.01").arg(m.captured(1)));
            return answer;
        }
        return breakReference(reference, 2); // no plain last return line to change
    }
    default: // a format error: the python block loses its tag
        answer.replace(QLatin1String("```python\n"), QLatin1String("```\n"));
        return answer;
    }
}

// ---- KernelBench format ------------------------------------------------------------------------

/// The parts of a task file (tasks/*/*.toml) a torch-only ModelNew needs.
struct TaskFile
{
    QString forward;        ///< the reference's TorchScript forward
    QStringList inputNames; ///< forward's arguments before `p`
    struct Param
    {
        QString name;
        QList<qint64> shape; ///< full scale
        bool buffer = false;
    };
    QList<Param> params;
    bool hasInitInputs = false;
};

/// The task file of "L2/1" under tasksDir (level2/01_*.toml), empty when there is none.
QString taskFilePath(const QString& tasksDir, const QString& task)
{
    const QStringList parts = task.mid(1).split(QLatin1Char('/'));
    if (parts.size() != 2)
        return {};
    const QDir levelDir(tasksDir + QStringLiteral("/level") + parts[0]);
    const QStringList files =
        levelDir.entryList({QStringLiteral("%1_*.toml").arg(parts[1].toInt(), 2, 10, QLatin1Char('0'))}, QDir::Files);
    return files.isEmpty() ? QString() : levelDir.filePath(files.first());
}

/// The task file of "L2/1" under tasksDir, read with the few rules these files follow
/// (docs/task-format.md): a forward in triple quotes, [dims] of integers, [[params]] tables.
std::optional<TaskFile> readTaskFile(const QString& tasksDir, const QString& task)
{
    const QString path = taskFilePath(tasksDir, task);
    if (path.isEmpty())
        return std::nullopt;
    const QString text = readText(path);
    TaskFile t;
    static const QRegularExpression forward(QStringLiteral("forward = '''\\n([\\s\\S]*?)'''"));
    t.forward = forward.match(text).captured(1);
    static const QRegularExpression def(QStringLiteral("def forward\\(([^)]*)\\)"));
    static const QRegularExpression argName(QStringLiteral("(?:^|,)\\s*([A-Za-z_][A-Za-z_0-9]*)\\s*:"));
    for (auto it = argName.globalMatch(def.match(t.forward).captured(1)); it.hasNext();) {
        const QString name = it.next().captured(1);
        if (name != QLatin1String("p"))
            t.inputNames << name;
    }
    static const QRegularExpression initInputs(QStringLiteral("(?m)^init_inputs\\s*="));
    t.hasInitInputs = initInputs.match(text).hasMatch();
    QHash<QString, qint64> dims;
    static const QRegularExpression dimsSection(QStringLiteral("(?m)^\\[dims\\]\\n([\\s\\S]*?)(?=^\\[)"));
    static const QRegularExpression dimLine(QStringLiteral("(?m)^([A-Za-z_][A-Za-z_0-9]*)\\s*=\\s*([0-9]+)"));
    for (auto it = dimLine.globalMatch(dimsSection.match(text).captured(1)); it.hasNext();) {
        const QRegularExpressionMatch m = it.next();
        dims.insert(m.captured(1), m.captured(2).toLongLong());
    }
    const QStringList blocks = text.split(QStringLiteral("[[params]]"));
    static const QRegularExpression nameLine(QStringLiteral("(?m)^name\\s*=\\s*\"([^\"]+)\""));
    static const QRegularExpression shapeLine(QStringLiteral("(?m)^shape\\s*=\\s*\\[([^\\]]*)\\]"));
    static const QRegularExpression bufferLine(QStringLiteral("(?m)^buffer\\s*=\\s*true"));
    for (qsizetype i = 1; i < blocks.size(); ++i) {
        const QString block = blocks[i].section(QStringLiteral("\n["), 0, 0); // up to the next table
        TaskFile::Param param;
        param.name = nameLine.match(block).captured(1);
        for (QString d : shapeLine.match(block).captured(1).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            d = d.trimmed().remove(QLatin1Char('"'));
            bool number = false;
            const qint64 v = d.toLongLong(&number);
            param.shape << (number ? v : dims.value(d, -1));
        }
        param.buffer = bufferLine.match(block).hasMatch();
        if (!param.name.isEmpty())
            t.params << param;
    }
    return t;
}

/// A ModelNew that computes the reference with torch: the task's forward, called with the
/// module's own parameters and buffers under the reference's names. With `copyExtension`, the
/// result goes through a one-kernel load_inline copy (what the failure modes below break).
QString torchOnlyModelNew(const TaskFile& t, bool copyExtension)
{
    QString params;
    for (const TaskFile::Param& p : t.params) {
        QStringList dims;
        for (const qint64 d : p.shape)
            dims << QString::number(d);
        params += QStringLiteral("    (\"%1\", (%2%3), %4),\n")
                      .arg(p.name, dims.join(QStringLiteral(", ")), dims.size() == 1 ? QStringLiteral(",") : QString(),
                           p.buffer ? QStringLiteral("True") : QStringLiteral("False"));
    }
    QString reference = t.forward;
    reference.replace(QStringLiteral("def forward("), QStringLiteral("def reference_forward("));
    // TorchScript's `torch.<op>` names every ATen op; Python's torch module lacks these (they are
    // torch.nn.functional's, with the same leading arguments), which the tasks' forwards call.
    for (const char* op :
         {"adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool2d", "avg_pool2d", "avg_pool3d", "elu",
          "gelu", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu", "linear", "mish", "silu", "softplus"})
        reference.replace(QStringLiteral("torch.%1(").arg(QLatin1String(op)),
                          QStringLiteral("F.%1(").arg(QLatin1String(op)));
    const QString args = t.inputNames.join(QStringLiteral(", "));
    const QString callArgs = args.isEmpty() ? QStringLiteral("p") : args + QStringLiteral(", p");
    QString out = QStringLiteral(
        "A ModelNew that keeps the reference's computation in torch.\n\n```python\n"
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nfrom torch import Tensor\n"
        "from typing import Dict, List, Optional, Tuple\n");
    if (copyExtension)
        out += QStringLiteral(
            "from torch.utils.cpp_extension import load_inline\n\n"
            "copy_source = r\"\"\"\n#include <torch/extension.h>\n\n"
            "__global__ void copy_kernel(const float* in, float* out, long n) {\n"
            "    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;\n    if (i < n) out[i] = in[i];\n}\n\n"
            "torch::Tensor copy_out(torch::Tensor x) {\n    auto y = torch::empty_like(x);\n"
            "    long n = x.numel();\n    int threads = 256;\n    long blocks = (n + threads - 1) / threads;\n"
            "    copy_kernel<<<blocks, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);\n    return y;\n}\n"
            "\"\"\"\n\n"
            "copy_ext = load_inline(name=\"kwb_fixture_copy\", cpp_sources=\"torch::Tensor copy_out(torch::Tensor "
            "x);\", "
            "cuda_sources=copy_source, functions=[\"copy_out\"], extra_cuda_cflags=[\"-O3\"], verbose=False)\n");
    out += QStringLiteral("\nPARAMETERS = [\n") + params + QStringLiteral("]\n\n\n") + reference.trimmed() +
           QStringLiteral("\n\n\n"
                          "def owner_of(root: nn.Module, dotted: str) -> nn.Module:\n"
                          "    module = root\n"
                          "    for part in dotted.split(\".\")[:-1]:\n"
                          "        if part not in module._modules:\n"
                          "            module.add_module(part, nn.Module())\n"
                          "        module = module._modules[part]\n"
                          "    return module\n\n\n"
                          "class ModelNew(nn.Module):\n") +
           (t.hasInitInputs ? QStringLiteral("    def __init__(self, *init_inputs):\n")
                            : QStringLiteral("    def __init__(self):\n")) +
           QStringLiteral(
               "        super().__init__()\n"
               "        for name, shape, is_buffer in PARAMETERS:\n"
               "            leaf = name.split(\".\")[-1]\n"
               "            if is_buffer:\n"
               "                owner_of(self, name).register_buffer(leaf, torch.zeros(shape))\n"
               "            else:\n"
               "                owner_of(self, name).register_parameter(leaf, nn.Parameter(torch.zeros(shape)))\n\n") +
           QStringLiteral("    def forward(self%1):\n").arg(args.isEmpty() ? QString() : QStringLiteral(", ") + args) +
           QStringLiteral("        p = dict(self.named_parameters())\n"
                          "        p.update(dict(self.named_buffers()))\n");
    if (copyExtension)
        out += QStringLiteral("        return copy_ext.copy_out(reference_forward(%1).contiguous())\n").arg(callArgs);
    else
        out += QStringLiteral("        return reference_forward(%1)\n").arg(callArgs);
    out += QStringLiteral("```\n");
    return out;
}

/// A KernelBench answer broken as the study's model broke them (the header lists the kinds).
QString breakKernelBench(const QString& answer, int kind, QString* what)
{
    QString broken = answer;
    switch (kind % 3) {
    case 0: // a keyword load_inline does not have
        *what = QStringLiteral("kb-bad-keyword");
        if (broken.contains(QLatin1String("extra_cuda_cflags=")))
            broken.replace(QLatin1String("extra_cuda_cflags="), QLatin1String("extra_cuda_flags="));
        else
            broken.replace(QLatin1String("load_inline("), QLatin1String("load_inline(extra_cuda_flags=[\"-O3\"], "));
        return broken;
    case 1: { // the function called by another name than `functions` binds
        static const QRegularExpression functions(
            QStringLiteral("functions=\\[\\s*[\"']([A-Za-z_][A-Za-z_0-9]*)[\"']"));
        const QString name = functions.match(broken).captured(1);
        if (!name.isEmpty()) {
            *what = QStringLiteral("kb-function-name");
            broken.replace(QRegularExpression(QStringLiteral("\\.%1\\(").arg(name)),
                           QStringLiteral(".%1_cuda(").arg(name));
            return broken;
        }
        [[fallthrough]];
    }
    default: // a ModelNew signature the task does not call: the constructor, else forward
        *what = QStringLiteral("kb-signature");
        if (broken.contains(QLatin1String("def __init__(self):")))
            broken.replace(QLatin1String("def __init__(self):"), QLatin1String("def __init__(self, hidden_size):"));
        else
            broken.replace(QRegularExpression(QStringLiteral("def forward\\(self([^)]*)\\)")),
                           QStringLiteral("def forward(self\\1, bias_term)"));
        return broken;
    }
}

// ---- Recorded answers (--recorded DIR) ---------------------------------------------------------

/// What a folder of generations holds per task, in the order served.
struct RecordedAnswers
{
    QHash<QString, QStringList> texts; ///< task -> answers: run folder, then sample order
    QHash<QString, QStringList> files; ///< task -> the file each answer was read from (for --log)
};

/// The folder's generations, found by `kwb import kernelbench`'s own rules (core's
/// scanKernelBenchFolder): each served as the model's text, the whole response where the folder
/// kept one (also where the import takes the module beside it: a model wrote the response), else
/// the module in a ```python fence. `notes` gets what was skipped, per kind with an example (a
/// corpus such as Kernel-Coder's runs/ has thousands beyond this workbench's tasks), for stderr.
RecordedAnswers readRecorded(const QString& dir, const std::function<bool(const QString&)>& hasTask, QStringList* notes)
{
    const kwb::GenerationScan scan = kwb::scanKernelBenchFolder(dir, hasTask);
    const auto key = [](const QString& runFolder, int level, int problem, int sample) {
        return QStringLiteral("%1|%2|%3|%4").arg(runFolder).arg(level).arg(problem).arg(sample);
    };
    QHash<QString, QString> responseOf; // sample -> its whole response, skipped by the import
    QMap<QString, QString> exampleOf;   // skip kind -> its first file and reason
    for (const kwb::SkippedFile& skipped : scan.skipped) {
        if (skipped.kind == kwb::SkipKind::ResponseOfKernel) {
            const kwb::GenerationPath path = kwb::parseGenerationPath(skipped.file);
            responseOf.insert(key(path.runFolder, path.level, path.problem, path.sample), skipped.file);
            continue;
        }
        if (!exampleOf.contains(skipped.kind))
            exampleOf.insert(skipped.kind, QStringLiteral("%1: %2").arg(skipped.file, skipped.reason));
    }
    const QMap<QString, int> skippedByKind = scan.skippedByKind();
    for (auto it = exampleOf.cbegin(); it != exampleOf.cend(); ++it)
        *notes << QStringLiteral("skipped %1 file(s) (%2), e.g. %3")
                      .arg(skippedByKind.value(it.key()))
                      .arg(it.key(), it.value());
    const QDir root(dir);
    RecordedAnswers recorded;
    for (const kwb::FoundGeneration& g : scan.generations) {
        const QString response = responseOf.value(key(g.runFolder, g.level, g.problem, g.sample));
        const QString file = !response.isEmpty() ? response : g.file;
        QFile f(root.filePath(file));
        if (!f.open(QIODevice::ReadOnly)) {
            *notes << QStringLiteral("skipped %1: unreadable: %2").arg(file, f.errorString());
            continue;
        }
        QString text = QString::fromUtf8(f.readAll());
        if (response.isEmpty() && !g.wholeResponse) {
            if (!text.endsWith(QLatin1Char('\n')))
                text += QLatin1Char('\n');
            text = QStringLiteral("```python\n") + text + QStringLiteral("```\n");
        }
        recorded.texts[g.task] << text;
        recorded.files[g.task] << file;
    }
    return recorded;
}

/// The answer for a task the folder has nothing for: plain text, no module, so the run stores it
/// as the model's failure to answer (the worker's format_error), as a model that cannot would.
// The model id the server lists with --recorded: "recorded-model", and where the folder's
// generation configs name the model that wrote the text (KernelBench's generate_samples.py writes
// `model_name:` into each run's generation_config.yaml), "recorded-model:<those names>", so a run
// and every page that shows it say whose text was replayed (core/study/provenance.h).
QString recordedModelId(const QString& dir)
{
    static const QRegularExpression modelLine(QStringLiteral("^model_name:\\s*['\"]?([^'\"#]+?)['\"]?\\s*(#.*)?$"),
                                              QRegularExpression::MultilineOption);
    QStringList names;
    QDirIterator it(dir, {QStringLiteral("generation_config.yaml")}, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QRegularExpressionMatch m = modelLine.match(readText(it.next()));
        if (m.hasMatch() && !names.contains(m.captured(1).trimmed()))
            names << m.captured(1).trimmed();
    }
    names.sort();
    return names.isEmpty() ? QStringLiteral("recorded-model")
                           : QStringLiteral("recorded-model:") + names.join(QLatin1Char('+'));
}

QString noRecordedAnswer(const QString& task, const QString& dir, const RecordedAnswers& recorded)
{
    QStringList tasks = recorded.texts.keys();
    std::sort(tasks.begin(), tasks.end());
    return QStringLiteral(
               "No recorded answer for task %1: the recorded-model server (kwb-fixture-llm --recorded %2) has "
               "no generation of it (it has %3), so there is no module here.\n")
        .arg(task, dir, tasks.isEmpty() ? QStringLiteral("none") : tasks.join(QStringLiteral(", ")));
}

} // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("kwb-fixture-llm"));
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "An OpenAI-compatible test server answering with the project's candidate fixtures, or with --recorded "
        "with the generations a model wrote (see the source's header for the policy). Prints its base URL on "
        "stdout, then serves until killed."));
    parser.addHelpOption();
    const QCommandLineOption candidatesOption(QStringLiteral("candidates"), QStringLiteral("tests/fixtures/candidates"),
                                              QStringLiteral("DIR"));
    const QCommandLineOption seedOption(QStringLiteral("seed"), QStringLiteral("policy seed (default 1)"),
                                        QStringLiteral("N"), QStringLiteral("1"));
    const QCommandLineOption maxNeedOption(QStringLiteral("max-need"),
                                           QStringLiteral("most failed answers before a right one (default 4)"),
                                           QStringLiteral("N"), QStringLiteral("4"));
    const QCommandLineOption delayOption(QStringLiteral("delay-ms"),
                                         QStringLiteral("latency of each answer (default 30)"), QStringLiteral("MS"),
                                         QStringLiteral("30"));
    const QCommandLineOption logOption(QStringLiteral("log"), QStringLiteral("append one line per answer to FILE"),
                                       QStringLiteral("FILE"));
    const QCommandLineOption statelessOption(
        QStringLiteral("stateless"),
        QStringLiteral("answers are a function of the task, --seed, the request's seed and the prompt (no per-task "
                       "counter): for kwb sweep, whose runs ask with the same seeds"));
    const QCommandLineOption formatOption(
        QStringLiteral("answer-format"),
        QStringLiteral("native (default) or kernelbench (class ModelNew with load_inline)"), QStringLiteral("FORMAT"),
        QStringLiteral("native"));
    const QCommandLineOption tasksOption(
        QStringLiteral("tasks"),
        QStringLiteral("task files, for torch-only ModelNew answers and the tasks --recorded serves "
                       "(default: the source tree's)"),
        QStringLiteral("DIR"), QStringLiteral(KWB_FIXTURE_TASKS_DIR));
    const QCommandLineOption recordedOption(
        QStringLiteral("recorded"),
        QStringLiteral("answer with the generations of DIR, a folder as `kwb import kernelbench` reads it, per task "
                       "(instead of --candidates): the whole response, else the module in a ```python fence; "
                       "sample 0, 1, ... of a task in turn, wrapping; with --stateless, sample (request seed + "
                       "choice) mod count. A task without one gets a plain-text answer saying so (no module: "
                       "format_error); other roles a fixed note. See the source's header."),
        QStringLiteral("DIR"));
    // A fixed port keeps the endpoint one URL across calls: runs compare (ablation baselines, the
    // report's pairs) only where their endpoints are the same.
    const QCommandLineOption portOption(QStringLiteral("port"),
                                        QStringLiteral("listen on 127.0.0.1:PORT (default: any free port)"),
                                        QStringLiteral("PORT"), QStringLiteral("0"));
    parser.addOptions({candidatesOption, seedOption, maxNeedOption, delayOption, logOption, statelessOption,
                       formatOption, tasksOption, recordedOption, portOption});
    parser.process(app);

    const QString dir = parser.value(candidatesOption);
    const bool recordedMode = parser.isSet(recordedOption);
    if (!recordedMode && (dir.isEmpty() || !QDir(dir + QStringLiteral("/reference")).exists())) {
        std::fprintf(stderr, "kwb-fixture-llm: --candidates DIR must hold reference/ (tests/fixtures/candidates)\n");
        return 2;
    }
    const int seed = parser.value(seedOption).toInt();
    const int maxNeed = std::max(0, parser.value(maxNeedOption).toInt());
    const int delayMs = std::max(0, parser.value(delayOption).toInt());
    const bool stateless = parser.isSet(statelessOption);
    const QString answerFormat = parser.value(formatOption);
    if (answerFormat != QLatin1String("native") && answerFormat != QLatin1String("kernelbench")) {
        std::fprintf(stderr, "kwb-fixture-llm: --answer-format is native or kernelbench\n");
        return 2;
    }
    const bool kernelbench = answerFormat == QLatin1String("kernelbench");
    const QString tasksDir = parser.value(tasksOption);

    // Recorded answers: the tasks this workbench has are those with a task file (--tasks), as the
    // import asks the worker; what the folder holds beyond them is listed as skipped.
    const QString recordedDir = recordedMode ? QDir(parser.value(recordedOption)).absolutePath() : QString();
    RecordedAnswers recorded;
    if (recordedMode) {
        if (parser.isSet(formatOption) && !kernelbench) {
            std::fprintf(
                stderr,
                "kwb-fixture-llm: recorded answers are in KernelBench's format (--answer-format kernelbench)\n");
            return 2;
        }
        if (!QFileInfo(recordedDir).isDir()) {
            std::fprintf(stderr, "kwb-fixture-llm: --recorded %s: no such folder\n", qPrintable(recordedDir));
            return 2;
        }
        QStringList notes;
        recorded = readRecorded(
            recordedDir, [&](const QString& task) { return !taskFilePath(tasksDir, task).isEmpty(); }, &notes);
        for (const QString& note : std::as_const(notes))
            std::fprintf(stderr, "kwb-fixture-llm: %s\n", qPrintable(note));
        QStringList tasks = recorded.texts.keys();
        std::sort(tasks.begin(), tasks.end());
        QStringList counts;
        int answers = 0;
        for (const QString& task : std::as_const(tasks)) {
            counts << QStringLiteral("%1 x%2").arg(task).arg(recorded.texts.value(task).size());
            answers += int(recorded.texts.value(task).size());
        }
        std::fprintf(stderr, "kwb-fixture-llm: %d recorded answers of %d tasks in %s%s%s\n", answers, int(tasks.size()),
                     qPrintable(recordedDir), tasks.isEmpty() ? "" : ": ",
                     qPrintable(counts.join(QStringLiteral(", "))));
        if (tasks.isEmpty()) {
            std::fprintf(stderr, "kwb-fixture-llm: --recorded %s holds no generation of a task here\n",
                         qPrintable(recordedDir));
            return 2;
        }
    }

    // Real failing fixtures by task, from the manifest's file/task pairs.
    QHash<QString, QStringList> failingByTask;
    {
        const QString manifest = readText(dir + QStringLiteral("/manifest.toml"));
        static const QRegularExpression entry(
            QStringLiteral("file = \"(failing/[^\"]+)\"\\s*\\ntask = \"([^\"]+)\"\\s*\\nexpect = "
                           "\"(compile_error|incorrect|format_error|runtime_error)\""));
        for (auto it = entry.globalMatch(manifest); it.hasNext();) {
            const QRegularExpressionMatch m = it.next();
            failingByTask[m.captured(2)].append(m.captured(1));
        }
    }

    QFile log;
    if (parser.isSet(logOption)) {
        log.setFileName(parser.value(logOption));
        if (!log.open(QIODevice::Append | QIODevice::Text)) {
            std::fprintf(stderr, "kwb-fixture-llm: cannot write %s\n", qPrintable(log.fileName()));
            return 2;
        }
    }

    QHash<QString, int> answered; // task -> answers given
    ScriptedLlmServer server;
    // The model a run stores names what answered it (core/study/provenance.h: fixture answers,
    // or a model's recorded text replayed).
    server.setModels({recordedMode ? recordedModelId(recordedDir) : QStringLiteral("fixture-model")});
    server.setResponder([&](const QJsonObject& request) {
        ScriptedLlmServer::Reply reply;
        reply.delayMs = delayMs;
        QString prompt;
        for (const QJsonValue& m : request.value(QLatin1String("messages")).toArray())
            prompt += m.toObject().value(QLatin1String("content")).toString() + QLatin1Char('\n');
        reply.promptTokens = int(prompt.size() / 4);
        static const QRegularExpression answerFor(QStringLiteral("answer for task (L\\d+/\\d+)"));
        static const QRegularExpression anyTask(QStringLiteral("(L\\d+/\\d+)"));
        QRegularExpressionMatch m = answerFor.match(prompt);
        // The generator's instruction (prompts-kernelbench/partials/contract): other roles show the problem file too.
        if (!m.hasMatch() && prompt.contains(QLatin1String("Name your optimized architecture ModelNew"))) {
            const QString task = taskOfProblemFile(prompt, tasksDir);
            if (!task.isEmpty())
                m = answerFor.match(QStringLiteral("answer for task ") + task);
        }
        const int choices = std::max(1, request.value(QLatin1String("n")).toInt(1));
        QStringList texts, what;
        if (recordedMode)
            reply.verbatim = true; // model text as it was written
        if (!m.hasMatch()) {
            QString task = anyTask.match(prompt).captured(1);
            if (task.isEmpty()) // a KernelBench-format prompt names no task: its problem file does
                task = taskOfProblemFile(prompt, tasksDir);
            if (recordedMode) // generations are all a folder records: say so rather than invent an analysis
                texts << QStringLiteral(
                             "Notes on %1: none recorded. This is the recorded-model server (kwb-fixture-llm "
                             "--recorded), which holds only the answers a model wrote for the generator; "
                             "this fixed text stands in for an analyzer, researcher, triager or critic turn.")
                             .arg(task.isEmpty() ? QStringLiteral("the task") : task);
            else
                texts << QStringLiteral(
                             "Notes on %1: the heavy operator is already a library call; keep it, and fuse the "
                             "memory-bound epilogue into one elementwise kernel that reads the intermediate once.")
                             .arg(task.isEmpty() ? QStringLiteral("the task") : task);
            what << QStringLiteral("note");
        } else if (recordedMode) {
            const QString task = m.captured(1);
            const QStringList answers = recorded.texts.value(task);
            const QJsonValue requestSeed = request.value(QLatin1String("seed"));
            for (int i = 0; i < choices; ++i) {
                if (answers.isEmpty()) {
                    texts << noRecordedAnswer(task, recordedDir, recorded);
                    what << QStringLiteral("no-recorded-answer");
                    continue;
                }
                const qint64 count = answers.size();
                const qint64 pick =
                    stateless ? (requestSeed.isDouble() ? requestSeed.toInteger() : 0) + i : answered[task]++;
                const int k = int(((pick % count) + count) % count);
                texts << answers.at(k);
                what << recorded.files.value(task).at(k);
            }
            if (log.isOpen()) {
                QTextStream(&log) << task << " answers=" << what.join(QLatin1Char(',')) << '\n';
                log.flush();
            }
        } else {
            const QString task = m.captured(1);
            const QString reference =
                readText(dir + QStringLiteral("/reference/") + fileStem(task) + QStringLiteral(".md"));
            const bool pilotWording = prompt.contains(QLatin1String("custom tiled CUDA kernels for every operator"));
            const int need = stableHash(task + QString::number(seed)) % (maxNeed + 1) + (pilotWording ? 2 : 0);
            const QString twin =
                kernelbench ? readText(dir + QStringLiteral("/kernelbench/") + fileStem(task) + QStringLiteral(".md"))
                            : QString();
            const std::optional<TaskFile> taskFile = kernelbench ? readTaskFile(tasksDir, task) : std::nullopt;
            const QJsonValue requestSeed = request.value(QLatin1String("seed"));
            for (int i = 0; i < choices; ++i) {
                const QString drawKey = task + QString::number(seed) + QLatin1Char('/') +
                                        (requestSeed.isDouble() ? QString::number(requestSeed.toInteger() + i)
                                                                : QStringLiteral("none/%1").arg(i)) +
                                        QLatin1Char('/') + prompt;
                const int k = stateless ? stableHash(drawKey) % (maxNeed + 3) : answered[task]++;
                if (kernelbench) {
                    if (!taskFile && twin.isEmpty()) {
                        texts << QStringLiteral("I cannot write this kernel.");
                        what << QStringLiteral("no-task-file");
                    } else if (k >= need) {
                        texts << (twin.isEmpty() ? torchOnlyModelNew(*taskFile, false) : twin);
                        what << (twin.isEmpty() ? QStringLiteral("kb-torch-only") : QStringLiteral("kb-twin"));
                    } else {
                        QString kind;
                        texts << breakKernelBench(twin.isEmpty() ? torchOnlyModelNew(*taskFile, true) : twin,
                                                  k + stableHash(task), &kind);
                        what << kind;
                    }
                    continue;
                }
                if (reference.isEmpty()) {
                    texts << QStringLiteral("I cannot write this kernel.");
                    what << QStringLiteral("no-fixture");
                } else if (k >= need) {
                    texts << reference;
                    what << QStringLiteral("reference");
                } else if (const QStringList failing = failingByTask.value(task); !failing.isEmpty() && k % 2 == 0) {
                    const QString file = failing.at((k / 2) % failing.size());
                    texts << readText(dir + QLatin1Char('/') + file);
                    what << file;
                } else {
                    texts << breakReference(reference, k + stableHash(task));
                    what << QStringLiteral("broken-%1").arg((k + stableHash(task)) % 3);
                }
            }
            if (log.isOpen()) {
                QTextStream(&log) << task << " need=" << need << " answers=" << what.join(QLatin1Char(',')) << '\n';
                log.flush();
            }
        }
        reply.texts = texts;
        qsizetype chars = 0;
        for (const QString& t : std::as_const(texts))
            chars += t.size();
        reply.completionTokens = int(chars / 4);
        return reply;
    });
    bool portOk = false;
    const uint port = parser.value(portOption).toUInt(&portOk);
    if (!portOk || port > 65535) {
        std::fprintf(stderr, "kwb-fixture-llm: --port takes a number from 0 to 65535\n");
        return 2;
    }
    if (!server.start(quint16(port))) {
        std::fprintf(stderr, "kwb-fixture-llm: cannot listen on 127.0.0.1:%u\n", port);
        return 1;
    }
    std::printf("%s\n", qPrintable(server.baseUrl().toString()));
    std::fflush(stdout);
    return app.exec();
}
