#include "formats/torch/weights_unpickler.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <map>
#include <memory>

#include "formats/torch/zip_reader.h"
#include "util/error.h"

namespace grassaudit {
namespace {

// A pickled value, as far as weights need one.
struct PV;
using PVp = std::shared_ptr<PV>;
struct PV {
  enum class K { kNone, kBool, kInt, kFloat, kStr, kTuple, kList, kDict, kGlobal, kTensor, kMark } k = K::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                              // str; global: "module.name"
  std::vector<PVp> items;                     // tuple, list
  std::vector<std::pair<PVp, PVp>> dict;      // dict, in insertion order
  at::Tensor t;
};

PVp make(PV::K k) {
  auto p = std::make_shared<PV>();
  p->k = k;
  return p;
}

at::ScalarType storage_dtype(const std::string& global, const std::string& what) {
  static const std::map<std::string, at::ScalarType> kTypes{
      {"torch.FloatStorage", at::kFloat},   {"torch.DoubleStorage", at::kDouble}, {"torch.HalfStorage", at::kHalf},
      {"torch.BFloat16Storage", at::kBFloat16}, {"torch.LongStorage", at::kLong}, {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort},   {"torch.CharStorage", at::kChar},     {"torch.ByteStorage", at::kByte},
      {"torch.BoolStorage", at::kBool}};
  auto it = kTypes.find(global);
  if (it == kTypes.end()) throw InputError(fmt::format("{}: storage type {} is not read", what, global));
  return it->second;
}

class Unpickler {
 public:
  Unpickler(const ZipReader& zip, std::string pkl, std::string what)
      : zip_(zip), pkl_(std::move(pkl)), what_(std::move(what)) {}

  PVp run() {
    while (true) {
      const uint8_t op = byte();
      switch (op) {
        case 0x80: byte(); break;                       // PROTO
        case 0x95: bytes(8); break;                     // FRAME
        case '}': push(make(PV::K::kDict)); break;      // EMPTY_DICT
        case ']': push(make(PV::K::kList)); break;      // EMPTY_LIST
        case ')': push(make(PV::K::kTuple)); break;     // EMPTY_TUPLE
        case '(': push(make(PV::K::kMark)); break;      // MARK
        case 'q': memo_[byte()] = top(); break;         // BINPUT
        case 'r': memo_[uint(4)] = top(); break;        // LONG_BINPUT
        case 0x94: memo_[memo_.size()] = top(); break;  // MEMOIZE
        case 'h': push(get(byte())); break;             // BINGET
        case 'j': push(get(uint(4))); break;            // LONG_BINGET
        case 'X': push(str(uint(4))); break;            // BINUNICODE
        case 0x8c: push(str(byte())); break;            // SHORT_BINUNICODE
        case 0x8d: push(str(uint(8))); break;           // BINUNICODE8
        case 'c': {                                     // GLOBAL
          const std::string module = line(), name = line();
          push(global(module + "." + name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          const PVp name = pop(), module = pop();
          if (name->k != PV::K::kStr || module->k != PV::K::kStr) fail("STACK_GLOBAL without strings");
          push(global(module->s + "." + name->s));
          break;
        }
        case 't': {  // TUPLE
          auto t = make(PV::K::kTuple);
          t->items = pop_to_mark();
          push(t);
          break;
        }
        case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
          auto t = make(PV::K::kTuple);
          t->items.resize(op - 0x84);
          for (size_t k = t->items.size(); k-- > 0;) t->items[k] = pop();
          push(t);
          break;
        }
        case 'K': push(integer(byte())); break;  // BININT1
        case 'M': push(integer(uint(2))); break;  // BININT2
        case 'J': push(integer(static_cast<int32_t>(uint(4)))); break;  // BININT
        case 0x8a: {  // LONG1
          const size_t n = byte();
          if (n > 8) fail("an integer wider than 64 bits");
          const std::string b = bytes(n);
          uint64_t v = 0;
          for (size_t k = n; k-- > 0;) v = (v << 8) | static_cast<uint8_t>(b[k]);
          if (n > 0 && n < 8 && (static_cast<uint8_t>(b[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);  // sign
          push(integer(static_cast<int64_t>(v)));
          break;
        }
        case 'G': {  // BINFLOAT, big-endian
          const std::string b = bytes(8);
          uint64_t v = 0;
          for (size_t k = 0; k < 8; ++k) v = (v << 8) | static_cast<uint8_t>(b[k]);
          auto p = make(PV::K::kFloat);
          std::memcpy(&p->f, &v, 8);
          push(p);
          break;
        }
        case 0x88: case 0x89: {  // NEWTRUE, NEWFALSE
          auto p = make(PV::K::kBool);
          p->b = op == 0x88;
          push(p);
          break;
        }
        case 'N': push(make(PV::K::kNone)); break;
        case 'Q': push(persistent(pop())); break;  // BINPERSID
        case 'R': {  // REDUCE
          const PVp args = pop(), fn = pop();
          push(reduce(fn, args));
          break;
        }
        case 's': {  // SETITEM
          const PVp v = pop(), k = pop();
          setitem(top(), k, v);
          break;
        }
        case 'u': {  // SETITEMS
          auto kv = pop_to_mark();
          if (kv.size() % 2) fail("SETITEMS with an odd count");
          for (size_t k = 0; k < kv.size(); k += 2) setitem(top(), kv[k], kv[k + 1]);
          break;
        }
        case 'a': {  // APPEND
          const PVp v = pop();
          list(top())->items.push_back(v);
          break;
        }
        case 'e': {  // APPENDS
          auto vs = pop_to_mark();
          auto l = list(top());
          l->items.insert(l->items.end(), vs.begin(), vs.end());
          break;
        }
        case 'b': pop(); break;  // BUILD: object state (a Parameter's python attributes): not used
        case '.': return pop();  // STOP
        default: fail(fmt::format("pickle opcode 0x{:02x} is not read", op));
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw InputError(fmt::format("{}: unreadable weights pickle: {}", what_, why));
  }
  uint8_t byte() {
    if (pos_ >= pkl_.size()) fail("it ends early");
    return static_cast<uint8_t>(pkl_[pos_++]);
  }
  std::string bytes(uint64_t n) {
    if (n > pkl_.size() - pos_) fail("it ends early");
    std::string s = pkl_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t uint(int n) {
    const std::string b = bytes(n);
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<uint8_t>(b[k]);
    return v;
  }
  std::string line() {
    const auto nl = pkl_.find('\n', pos_);
    if (nl == std::string::npos) fail("GLOBAL without a newline");
    std::string s = pkl_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return s;
  }
  void push(PVp v) {
    if (stack_.size() > 1000000) fail("its stack grows past a million values");
    stack_.push_back(std::move(v));
  }
  PVp pop() {
    if (stack_.empty()) fail("its stack underflows");
    PVp v = stack_.back();
    stack_.pop_back();
    return v;
  }
  PVp top() {
    if (stack_.empty()) fail("its stack underflows");
    return stack_.back();
  }
  PVp get(uint64_t k) {
    auto it = memo_.find(k);
    if (it == memo_.end()) fail(fmt::format("memo {} read before it is written", k));
    return it->second;
  }
  std::vector<PVp> pop_to_mark() {
    std::vector<PVp> out;
    while (true) {
      PVp v = pop();
      if (v->k == PV::K::kMark) break;
      out.push_back(std::move(v));
    }
    return {out.rbegin(), out.rend()};
  }
  PVp str(uint64_t n) {
    auto p = make(PV::K::kStr);
    p->s = bytes(n);
    return p;
  }
  static PVp integer(int64_t v) {
    auto p = make(PV::K::kInt);
    p->i = v;
    return p;
  }
  PVp list(const PVp& v) {
    if (v->k != PV::K::kList) fail("APPEND to something that is not a list");
    return v;
  }
  void setitem(const PVp& d, PVp k, PVp v) {
    if (d->k != PV::K::kDict) fail("SETITEM on something that is not a dict");
    d->dict.emplace_back(std::move(k), std::move(v));
  }
  PVp global(const std::string& name) {
    static const char* kAllowed[] = {"collections.OrderedDict", "torch._utils._rebuild_tensor_v2",
                                     "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state"};
    bool ok = name.rfind("torch.", 0) == 0 && name.size() > 13 && name.compare(name.size() - 7, 7, "Storage") == 0 &&
              name.find('.', 6) == std::string::npos;
    for (const char* a : kAllowed) ok = ok || name == a;
    if (!ok)
      throw InputError(fmt::format("{}: the weights pickle names {}, which a weights file has no use for: not loaded "
                                   "(only tensors, storages and dicts are read)",
                                   what_, name));
    auto p = make(PV::K::kGlobal);
    p->s = name;
    return p;
  }
  int64_t as_int(const PVp& v, const char* field) {
    if (v->k != PV::K::kInt) fail(fmt::format("{} is not an integer", field));
    return v->i;
  }
  std::vector<int64_t> ints(const PVp& v, const char* field) {
    if (v->k != PV::K::kTuple && v->k != PV::K::kList) fail(fmt::format("{} is not a tuple", field));
    std::vector<int64_t> out;
    for (const auto& e : v->items) out.push_back(as_int(e, field));
    return out;
  }
  // ('storage', torch.FloatStorage, key, location, numel) -> the storage, as a 1-d tensor.
  PVp persistent(const PVp& pid) {
    if (pid->k != PV::K::kTuple || pid->items.size() != 5 || pid->items[0]->k != PV::K::kStr ||
        pid->items[0]->s != "storage" || pid->items[1]->k != PV::K::kGlobal || pid->items[2]->k != PV::K::kStr)
      fail("a persistent id that is not a storage");
    const std::string key = pid->items[2]->s;
    auto cached = storages_.find(key);
    if (cached != storages_.end()) return cached->second;
    const at::ScalarType dtype = storage_dtype(pid->items[1]->s, what_);
    const int64_t numel = as_int(pid->items[4], "a storage's size");
    const std::string record = zip_.read("data/" + key);
    const auto esize = static_cast<int64_t>(c10::elementSize(dtype));
    if (numel < 0 || static_cast<uint64_t>(numel) > record.size() / static_cast<uint64_t>(esize))
      fail(fmt::format("storage {} holds {} bytes, not {} elements of {}", key, record.size(), numel,
                       c10::toString(dtype)));
    at::Tensor t = at::empty({numel}, at::TensorOptions().dtype(dtype));
    if (numel > 0) std::memcpy(t.data_ptr(), record.data(), static_cast<size_t>(numel * esize));
    auto p = make(PV::K::kTensor);
    p->t = t;
    storages_[key] = p;
    return p;
  }
  PVp reduce(const PVp& fn, const PVp& args) {
    if (fn->k != PV::K::kGlobal) fail("REDUCE of something that is not a global");
    if (args->k != PV::K::kTuple) fail("REDUCE without an argument tuple");
    const auto& a = args->items;
    if (fn->s == "collections.OrderedDict") return make(PV::K::kDict);
    if (fn->s == "torch._utils._rebuild_tensor_v2") {
      if (a.size() < 4 || a[0]->k != PV::K::kTensor) fail("_rebuild_tensor_v2 without a storage");
      const at::Tensor storage = a[0]->t;
      const int64_t offset = as_int(a[1], "a storage offset");
      const auto size = ints(a[2], "a tensor's size"), stride = ints(a[3], "a tensor's stride");
      if (size.size() != stride.size()) fail("size and stride of different lengths");
      int64_t last = offset;
      bool empty = false;
      for (size_t d = 0; d < size.size(); ++d) {
        if (size[d] < 0 || stride[d] < 0) fail("a negative size or stride");
        if (size[d] == 0) empty = true;
        else if (size[d] > 1 && stride[d] > (INT64_MAX - last) / (size[d] - 1)) fail("a tensor larger than memory");
        else last += (size[d] - 1) * stride[d];
      }
      if (offset < 0 || (!empty && last >= storage.numel()))
        fail(fmt::format("a tensor [{}] reaches past its storage of {} elements", fmt::join(size, ", "),
                         storage.numel()));
      auto p = make(PV::K::kTensor);
      p->t = storage.as_strided(size, stride, offset);
      return p;
    }
    if (fn->s == "torch._utils._rebuild_parameter" || fn->s == "torch._utils._rebuild_parameter_with_state") {
      if (a.empty() || a[0]->k != PV::K::kTensor) fail("_rebuild_parameter without a tensor");
      return a[0];
    }
    fail(fmt::format("{} called", fn->s));
  }

  const ZipReader& zip_;
  std::string pkl_;
  std::string what_;
  size_t pos_ = 0;
  std::vector<PVp> stack_;
  std::map<uint64_t, PVp> memo_;
  std::map<std::string, PVp> storages_;
};

PVp unpickle(const std::string& bytes, const std::string& what) {
  auto zip = ZipReader::parse(bytes);
  if (!zip) throw InputError(fmt::format("{}: not a torch.save zip file (truncated or damaged?)", what));
  const ZipReader::Entry* pkl = zip->find("data.pkl");
  if (!pkl) throw InputError(fmt::format("{}: a zip file without data.pkl, not a torch.save file", what));
  return Unpickler(*zip, zip->read(*pkl), what).run();
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> read_saved_tensor_dict(const std::string& bytes, const std::string& what) {
  if (bytes.empty()) return {};  // torch.export writes b"" for an absent artifact
  const PVp v = unpickle(bytes, what);
  if (v->k != PV::K::kDict) throw InputError(fmt::format("{}: holds no dict of tensors", what));
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& [k, t] : v->dict) {
    if (k->k != PV::K::kStr) throw InputError(fmt::format("{}: a key that is not a string", what));
    if (t->k != PV::K::kTensor)
      throw InputError(fmt::format("{}: entry '{}' is not a tensor (a TorchBind object or other value: not read)", what,
                                   k->s));
    out.emplace_back(k->s, t->t);
  }
  return out;
}

at::Tensor read_saved_tensor(const std::string& bytes, const std::string& what) {
  const PVp v = unpickle(bytes, what);
  if (v->k != PV::K::kTensor) throw InputError(fmt::format("{}: holds no tensor", what));
  return v->t;
}

}  // namespace grassaudit
