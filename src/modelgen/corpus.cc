// The built-in training text of the generated tokenizer: English prose, code, JSON, chat-like
// turns and a few non-Latin scripts, written for recur. Merges are learned from it, so common
// words and code fragments become single tokens, as in a real vocabulary.
#include "modelgen/tokenizer_gen.h"

namespace recur::modelgen {

const char* const kTrainingCorpus = R"corpus(
The river ran quietly past the old mill, and the morning light settled on the water like a thin
sheet of gold. Nobody in the village remembered when the wheel had last turned. Children still
walked down to the bank after school, to throw stones and to watch the herons standing in the
shallows, patient and still. In the evening the baker closed his shop, the lamps came on one by
one, and the smell of bread drifted along the street.

When you ask a question, the answer depends on what you already know. A good teacher listens
first, then explains the idea in simple words, and finally checks that the student can use it on
their own. Learning is not a race; it is a long walk with many small steps. Some days are hard,
and some are easy, but every day you practice, you get a little better than you were before.

The weather today is sunny with a light breeze from the west. Temperatures will reach 21 degrees
in the afternoon and fall to 12 degrees at night. Tomorrow there is a chance of rain in the
morning, clearing by noon. The forecast for the weekend looks warm and dry.

Memory is cheap, but bandwidth is not. A language model spends most of its time reading weights
from memory, so the speed of decoding is limited by how many bytes per second the machine can
move. Caching the state of a conversation means that the next turn does not have to read the
whole history again. The server keeps the prefix of every chat, and when a new request arrives
with the same beginning, it restores the saved state and only processes the new tokens.

Please write a short summary of the meeting. The team agreed to release the new version next
week, after the remaining tests pass. Anna will update the documentation, Ben will review the
performance numbers, and Chen will prepare the announcement. The next meeting is on Thursday at
ten o'clock. Questions? Send them to the project channel before Wednesday.

user: Can you help me plan a trip to the mountains?
assistant: Of course! How many days do you have, and do you prefer hiking or a relaxed stay?
user: Three days. I like hiking, but nothing too hard.
assistant: Then I suggest an easy trail on the first day, a lake walk on the second, and a short
climb to a viewpoint on the third. Bring water, a warm jacket, and good shoes.
user: What is the capital of France?
assistant: The capital of France is Paris.
user: Thanks! And what is 12 times 7?
assistant: 12 times 7 is 84.
system: You are a helpful assistant. Answer briefly and politely.
user: I'm not sure what you mean. Could you explain it again, please?
assistant: Sure. Let me think about it step by step, and then I'll give you the final answer.

#include <cstdint>
#include <string>
#include <vector>

// Returns the sum of the values in the vector.
int64_t sum(const std::vector<int64_t>& values) {
  int64_t total = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    total += values[i];
  }
  return total;
}

class Counter {
 public:
  explicit Counter(int start) : value_(start) {}
  void increment() { ++value_; }
  int value() const { return value_; }

 private:
  int value_ = 0;
};

def fibonacci(n):
    """Return the first n Fibonacci numbers."""
    result = []
    a, b = 0, 1
    for _ in range(n):
        result.append(a)
        a, b = b, a + b
    return result

if __name__ == "__main__":
    import sys
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    print(", ".join(str(x) for x in fibonacci(count)))

function fetchUser(id) {
  return fetch(`/api/users/${id}`)
    .then((response) => response.json())
    .catch((error) => console.error("request failed:", error));
}

const config = { port: 8080, host: "127.0.0.1", debug: false };
for (let i = 0; i < 10; i++) { console.log(i * i); }

SELECT name, email FROM users WHERE created_at > '2024-01-01' ORDER BY name LIMIT 20;

{"model": "recur-demo", "messages": [{"role": "system", "content": "You are a helpful assistant."},
 {"role": "user", "content": "Hello, how are you?"}], "temperature": 0.7, "max_tokens": 256,
 "stream": true}
{"id": "chatcmpl-123", "object": "chat.completion", "created": 1700000000, "choices": [{"index": 0,
 "message": {"role": "assistant", "content": "I am fine, thank you!"}, "finish_reason": "stop"}],
 "usage": {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30}}
{"name": "get_weather", "arguments": {"city": "Berlin", "unit": "celsius"}}
{"type": "function", "function": {"name": "search", "description": "Search the web",
 "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}

$ ls -la /usr/local/bin
$ git commit -m "Fix the cache eviction order" && git push origin main
$ cmake -S . -B build -G Ninja && ninja -C build

Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 100 256 1024 2048 3.14159 2.71828 1e-6 -7.5 99%

Le chat dort sur le canapé pendant que la pluie tombe doucement sur la ville. Nous allons au
marché demain matin pour acheter des légumes, du fromage et du pain frais.
Der schnelle braune Fuchs springt über den faulen Hund. Morgen fahren wir mit dem Zug nach
München, und am Abend gehen wir ins Theater.
El sol brilla sobre el mar y los niños juegan en la playa. ¿Quieres un café o un té?

今天天气很好，我们一起去公园散步吧。学习语言需要时间和耐心，每天练习一点点就会进步。
你好！请问有什么可以帮助你的吗？这个问题很有意思，让我想一想。
東京は日本の首都です。私は毎朝コーヒーを飲みながらニュースを読みます。ありがとうございます。
안녕하세요. 오늘은 날씨가 정말 좋네요. 같이 점심을 먹을까요?
Привет! Как дела? Сегодня мы будем изучать новые слова и читать короткий рассказ о море.
Москва — столица России. Зимой здесь бывает очень холодно, а летом тепло.
Καλημέρα! Η θάλασσα είναι ήρεμη σήμερα και ο ουρανός είναι καθαρός.
مرحبا بك! كيف حالك اليوم؟ اللغة العربية جميلة وغنية بالكلمات.
नमस्ते! आप कैसे हैं? आज मौसम बहुत अच्छा है और हम बाज़ार जा रहे हैं।
สวัสดีครับ วันนี้อากาศดีมาก เราจะไปเที่ยวทะเลกัน
שלום! מה שלומך היום? אני לומד עברית כבר שנה.
Emoji: 😀 🎉 👍 ❤️ 🚀 ✨ 🌍 — quotes “like this” and ‘this’, ellipsis… and café, naïve, résumé.

The quick brown fox jumps over the lazy dog. The five boxing wizards jump quickly. Pack my box
with five dozen liquor jugs. How vexingly quick daft zebras jump! Sphinx of black quartz, judge
my vow. The best way to predict the future is to invent it. Simple things should be simple, and
complex things should be possible. Make it work, make it right, make it fast.

In the beginning the program was small: one file, a few functions, and a test. Then users came,
and with them came requests for new features. Each feature was reasonable on its own, but
together they made the code harder to change. The team learned to write smaller functions, to
name things carefully, to keep modules apart, and to test every part before building on it.
A clear error message saves an hour of debugging; a good default saves a day of configuration.
)corpus";

}  // namespace recur::modelgen
