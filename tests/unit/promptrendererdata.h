#pragma once
// tst_promptrenderer's fixtures, in a header of their own: moc (Qt 6.4) lexes a raw string as an
// ordinary one, so these, whose quotes do not pair up that way, would hide the test's class from it.

namespace {

// L2/1 as the worker reports it (`tasks`, `analyze`, `profile`, `device`), trimmed by hand.
const char* kTask = R"({"id":"L2/1","level":2,"number":1,"title":"Conv2d, ReLU, bias add",
 "source":"level2/1_Conv2D_ReLU_BiasAdd.py","description":"Conv2d (64 -> 128, kernel 3), ReLU, then a per-channel bias.",
 "forward":"\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n    x = torch.conv2d(x, p[\"conv.weight\"], p[\"conv.bias\"], [1, 1], [0, 0], [1, 1], 1)\n    x = torch.relu(x)\n    return x + p[\"bias\"]\n",
 "dims":[{"name":"N","full":128,"smoke":2}],
 "inputs":[{"name":"x","kind":"tensor","shape":["N","C_in","H","W"],"full":[128,64,128,128],"smoke":[2,64,12,12],"dtype":"float32","generator":"rand"}],
 "params":[{"name":"conv.weight","shape":["C_out","C_in","K","K"],"full":[128,64,3,3]},
           {"name":"conv.bias","shape":["C_out"],"full":[128]},
           {"name":"bias","shape":["C_out",1,1],"full":[128,1,1]}]})";

const char* kAnalyze = R"({"task":"L2/1","scale":"full","output_shape":[128,128,126,126],
 "ops":[{"index":0,"op":"aten::conv2d","category":"conv","inputs":[[128,64,128,128],[128,64,3,3],[128]],"output":[128,128,126,126],"flops":239767683072,"bytes":654311424},
        {"index":1,"op":"aten::relu","category":"elementwise","inputs":[[128,128,126,126]],"output":[128,128,126,126],"flops":260112384,"bytes":2080899072},
        {"index":2,"op":"aten::add","category":"elementwise","inputs":[[128,128,126,126],[128,1,1]],"output":[128,128,126,126],"flops":260112384,"bytes":2080899584}],
 "flops":240287907840,"bytes_unfused":4816110080,"bytes_fused":1575010816,"intensity_unfused":49.89,"intensity_fused":152.56})";

const char* kProfile = R"({"task":"L2/1","total_ns":9120000,
 "ops":[{"index":0,"op":"aten::conv2d","time_ns":7413000,"share":0.8128,"kernels":2},
        {"index":2,"op":"aten::add","time_ns":860000,"share":0.0943,"kernels":1},
        {"index":1,"op":"aten::relu","time_ns":847000,"share":0.0929,"kernels":1}],"kernels":[]})";

const char* kDevice = R"({"available":true,"name":"NVIDIA H200","cc":"9.0","arch":"sm_90","sm_count":132,
 "sm_clock_khz":1980000,"hbm_theoretical_gbps":4800,
 "ceilings":{"hbm_copy_gbps":4010.5,"fp32_fma_gflops":51200.0}})";

const char* kFeedback = R"({"status":"compile_error","stage":"compile","message":"NVRTC failed: 1 error",
 "compile":{"ok":false,"log":"candidate.cu(3): error: identifier \"INFINITY\" is undefined","arch":"sm_90"},
 "answer":"```cuda\nextern \"C\" __global__ void k(float* y) { y[0] = INFINITY; }\n```\n\n```python\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n    return x\n```"})";

} // namespace
