#include "text/unicode_class.h"

#include <utf8proc.h>

namespace grassaudit {

bool is_python_space(int32_t cp) {
  if (cp == ' ' || (cp >= '\t' && cp <= '\r')) return true;
  if (cp < 0x80) return cp >= 0x1C && cp <= 0x1F;  // Python counts the separators FS..US.
  const utf8proc_property_t* p = utf8proc_get_property(cp);
  return p->category == UTF8PROC_CATEGORY_ZS || p->bidi_class == UTF8PROC_BIDI_CLASS_WS ||
         p->bidi_class == UTF8PROC_BIDI_CLASS_B || p->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

bool is_bert_whitespace(int32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  if (cp < 0x80) return false;
  return utf8proc_category(cp) == UTF8PROC_CATEGORY_ZS;
}

bool is_bert_control(int32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
      return true;
    default:
      return false;
  }
}

bool is_bert_punctuation(int32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
      (cp >= 123 && cp <= 126)) {
    return true;
  }
  if (cp < 0x80) return false;
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

bool is_cjk_ideograph(int32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_nonspacing_mark(int32_t cp) {
  return cp >= 0x80 && utf8proc_category(cp) == UTF8PROC_CATEGORY_MN;
}

}  // namespace grassaudit
