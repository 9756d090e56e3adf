#pragma once
// The compact view of a task's reference that the study template set shows the model (docs/prompts.md
// §Reference view), computed here and nowhere else: KernelBench shows a module's source, whose
// loops (`_make_layer`) keep ResNet-101 at a page; our TorchScript forward is unrolled (346 lines,
// 522 parameters for L3/10), which alone nearly fills a 7B model's 32K-token context.
//
// foldForward(): a run of three or more consecutive blocks of lines that differ only in the
// integers inside `p["..."]` keys (and in comments), all by the same step from one block to the
// next, is written once as `for i in range(a, b, s):` with the keys built from `str(i)`. The
// result is still TorchScript and computes the same thing: every iteration is one of the blocks.
// paramsView(): one line per run of parameters with the same prefix and shape
// (`bn1.{weight, bias, running_mean, running_var}: [64]`), and repeated groups of such lines
// folded the same way, the varying integer written as a range (`layer3.{1..22}.conv1.weight`).

#include <QList>
#include <QString>
#include <QStringList>

namespace kwb {

struct ReferenceParam
{
    QString name;
    QString shape; ///< as the prompt writes it: "[64, 3, 7, 7]"
};

/// The forward with repeated blocks folded into loops; `*folded` says whether anything was.
QString foldForward(const QString& forward, bool* folded = nullptr);
/// The parameters as "- `name`: shape" lines, grouped and folded; empty for no parameters.
QString paramsView(const QList<ReferenceParam>& params);

} // namespace kwb
