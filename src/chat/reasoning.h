// Splits generated text of thinking models into reasoning_content and content, incrementally:
// "<think>\nreasoning\n</think>\n\ncontent". Never emits part of a tag, nor newlines that may turn
// out to be the padding around a tag (the template trims those when the turn is rendered back).
// Thread-compatible: one per generated turn.
#pragma once

#include <string>
#include <string_view>

namespace recur::chat {

struct SplitText {
  std::string reasoning;
  std::string content;
};

class ReasoningSplitter {
 public:
  // starts_in_reasoning: the prompt ended inside <think> (Prompt::starts_in_reasoning).
  explicit ReasoningSplitter(bool starts_in_reasoning);
  SplitText push(std::string_view text);
  // End of generation: whatever was held back (an unclosed reasoning block stays reasoning).
  SplitText finish();
  // Whether any reasoning was seen (the message then carries reasoning_content).
  bool saw_reasoning() const { return saw_reasoning_; }

 private:
  enum class Mode { kStart, kReasoning, kContent };
  SplitText drain(bool final);
  Mode mode_;
  std::string pending_;  // text not yet classified or released
  bool saw_reasoning_ = false;
  bool at_section_start_ = true;  // leading newlines of a section are dropped
};

}  // namespace recur::chat
