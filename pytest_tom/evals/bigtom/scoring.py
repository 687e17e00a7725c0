"""BigToM's eight prompting methods (`evaluate_llm.py`, spec §3.3) verbatim, `format` x `prompt`, and the official substring
rule of `evaluate_conditions.py` (§3.5), deterministically. Official quirks kept on purpose: completion `1shot-cot` sends no
exemplar (it is `0shot-cot`), and the chat CoT methods read `evaluate_cot_chat.txt`, which the release lacks: its
`evaluate_cot_chat_model.txt` is used (an inference, reported). The rule: the gold key (`a)` / `b)`) anywhere in the
lower-cased answer is correct, else the other key is wrong: gold first, so an answer holding both is correct, as
officially (`both_keys`). Where the official code calls its LLM grader, the answer is matched against the option texts,
else it is `unparseable`: not correct, in the denominator (as a grader "False" is).
"""

from __future__ import annotations

from pytest_tom.evals.bigtom.data import BigToMSample
from pytest_tom.framework.base import Program
from pytest_tom.framework.judge import ask, verdict
from pytest_tom.record import Outcome, Record, failure
from pytest_tom.request import GenerationSettings, Message, Request

EVALUATE = ("Answer the questions based on the context. Keep your answer concise, few words are enough, maximum one "
            "sentence. Answer as 'Answer:<option>)<answer>'.")
"""`code/prompt_instructions/evaluate.txt` (150 bytes, no trailing newline)."""
EVALUATE_COT = ("Answer the questions based on the context. Think through your reasoning before answering in 'Thought:'. "
                "Write your answer as Answer:<option>)<answer>'.")
"""`evaluate_cot.txt` (151 bytes; the missing quote before `Answer:` is the file's)."""
COT_CHAT = ("Answer the questions based on the context. Reason step by step before answering in 'Thought: Let's think "
            "step by step'. Write your final answer as 'Answer:<option>)<answer>'. Always pick an option, do not say none "
            "of the above or that there is not enough information.")
"""`evaluate_cot_chat_model.txt` (267 bytes), standing in for the missing `evaluate_cot_chat.txt`."""
SHOT_STORY = ("Kofi is a fisherman from a small village in Ghana. He wants to catch enough fish today to provide for his "
              "family and sell the surplus at the market. Kofi repaired his fishing net last night. While Kofi is away "
              "from his boat, a group of monkeys comes and plays with the fishing net, tearing it apart. Kofi does not see "
              "the monkeys damaging his fishing net.")
SHOT_QUESTION = ("Does Kofi believe his fishing net is in good condition or torn apart?\nChoose one of the following:\n"
                 "a)Kofi believes his fishing net is in good condition.\nb)Kofi believes his fishing net is torn apart.")
SHOT_ANSWER = "a)Kofi believes his fishing net is in good condition."
SHOT_THOUGHT = ("Let's think step by step:\n1) Kofi repaired his fishing net last night. So last night he believes that his "
                "net is fixed.\n2) While Kofi is away from his boat, a group of monkeys comes and plays with the fishing net, "
                "tearing it apart.\n3) Kofi does not see the monkeys damaging his fishing net. So, his belief about his net "
                "stays the same. He thinks that it is fixed.\n4) Does Kofi believe his fishing net is in good condition or "
                "torn apart?\n5) Kofi believes his fishing net is in good condition.")
"""`ONE_SHOT` of `evaluate_llm.py`: line 4 of the release under 0_forward_belief_false_belief (a test item, spec §2.4)."""
STOP = ("Story:", "Question:")
STOP_COT = (*STOP, "Answer:")
TOKENS = {"completion": 25, "chat": 25, "completion-cot": 200, "chat-cot": 220}
"""max_new_tokens when the setting is 0 (spec §3.4); the completion CoT answer call always gets 30."""
GRADE = ("You are an expert comparing predicted answers with true answers. \nYou are given a question, the predicted answer, "
         "and the true answer.\nYou are asked to score the predicted answer as either True or False based on its similarity "
         "to the true answer.\nWe only care about semantic similarity, ignore whitespace, typos, punctuation, etc. and focus "
         "only on the meaning of the answer.\nMark as False if the answer says lack of information or None of the above.\n"
         "Mark as False if the answer has irrelevant information.\nIf a single character is given, match it to the true "
         "answer or the false answer and mark as True or False accordingly.")
"""`grade.txt` (625 bytes; line 1 ends with a space): the official LLM grader's instruction."""
GRADER = GenerationSettings(max_new_tokens=10, stop=("Predicted Answer:", "True Answer:", "Response:"))
"""The grader's call: text-davinci-003 at temperature 0, `max_tokens=10`, these stops (spec §3.5)."""


def _request(n: int, stop: tuple[str, ...], *messages: Message, answer: str = " {})") -> Request:
    return Request(messages=messages, settings=GenerationSettings(max_new_tokens=n, stop=stop), answer_labels=("a", "b"),
                   answer_format=answer)


def first(sample: BigToMSample, method: str, fmt: str, tokens: int) -> Request:
    """The one request of a method, or the first (thought) call of a completion CoT method."""
    cot, (a, b) = method.endswith("cot"), (c.text for c in sample.choices)
    n = tokens or TOKENS[fmt + ("-cot" if cot else "")]
    # the question with options is `--mcq`'s (spec §3.2): no space after `a)`/`b)`, no trailing newline
    user = f"Story: {sample.context.render()}\nQuestion: {sample.question}\nChoose one of the following:\na){a}\nb){b}"
    if fmt == "chat":
        said = f"Thought: {SHOT_THOUGHT}\nAnswer: {SHOT_ANSWER}" if cot else f"Answer: {SHOT_ANSWER}"
        shot = (Message("user", f"Story: {SHOT_STORY}\nQuestion: {SHOT_QUESTION}"), Message("assistant", said))
        return _request(n, (), Message("system", COT_CHAT if cot else EVALUATE), *(shot if method.startswith("1shot") else ()),
                        Message("user", user), answer="Answer: {})")
    if cot:
        return _request(n, STOP_COT, Message("user", f"{EVALUATE_COT}\n\n{user}\nThought: Let's think step by step:"))
    shot_text = f"\nStory: {SHOT_STORY}\nQuestion: {SHOT_QUESTION}\nAnswer: {SHOT_ANSWER}\n" if method == "1shot" else ""
    return _request(n, STOP, Message("user", f"{EVALUATE}{shot_text}\n\n{user}\nAnswer:"))


def grade(sample: BigToMSample, predicted: str) -> str:
    """The official grader prompt (`method='eval'`): the bare question, both answers as `<key>) <text>`, the answer."""
    gold, other = sorted("ab", key=lambda x: x != sample.gold_label)
    return (f"{GRADE}\n\nHere is the question:\n{sample.question}\nHere is the true answer:\n{gold}) "
            f"{sample.choice(gold).text}\nHere is the false answer:\n{other}) {sample.choice(other).text}\nHere is the "
            f"predicted answer:\n{predicted}\nIs the predicted answer close to the true answer compared to the false "
            "answer? Answer True or False.\nA:")


def answer_call(thought_request: Request, thought: str) -> Request:
    """The completion CoT second call: the first prompt, the thought as generated, then the answer cue (30 tokens)."""
    cue = "\nWrite the answer as <option>) <answer>\nAnswer:"
    return _request(30, STOP_COT, Message("user", thought_request.messages[0].content + thought + cue))


def parse_chat_response(response: str) -> str:
    """The official cut (chat 0shot-cot only): from 8 characters after the first `Answer:` (7 in when there is none)."""
    return response[response.find("Answer:") + 8:].strip()


def read(sample: BigToMSample, response: str | None, *, cut: bool, extraction: str = "official") -> tuple[str | None, str, bool]:
    """(letter, via, both_keys): by the official rule (`via` "key"), else the one option whose text the answer holds
    ("text"), else None ("none"); `cut`: chat 0shot-cot's quirk; `extraction` "first": the earlier key, not the gold first.
    """
    r = (response or "").strip()
    low = (parse_chat_response(r) if cut else r).lower()
    both = "a)" in low and "b)" in low
    if extraction == "first" and both:
        return min("ab", key=lambda x: low.find(f"{x})")), "key", both
    for letter in sorted("ab", key=lambda x: x != sample.gold_label):  # the gold key first
        if f"{letter})" in low:
            return letter, "key", both
    text = " ".join(low.split()).removesuffix(".")  # options and answer: whitespace collapsed, a final "." dropped
    hits = [c.label for c in sample.choices if " ".join(c.text.lower().split()).removesuffix(".") in text]
    return (hits[0], "text", both) if len(hits) == 1 else (None, "none", both)


def solve(sample: BigToMSample, method: str, fmt: str, tokens: int, extraction: str) -> Program:
    reqs = [first(sample, method, fmt, tokens)]
    texts = [(yield reqs[:1])[0].text]
    if fmt == "completion" and method.endswith("cot"):  # the thought, then the answer call
        reqs.append(answer_call(reqs[0], texts[0] or ""))
        texts.append((yield reqs[1:])[0].text)
    cut = (fmt, method) == ("chat", "0shot-cot")
    record = score(sample, texts[-1], cut=cut, extraction=extraction, keys=tuple(r.key for r in reqs), texts=tuple(texts))
    if record.details["via"] == "none":  # where the official code asks its grader: the judged step (--tom-judge)
        r = (texts[-1] or "").strip()
        (said,) = yield [ask(grade(sample, parse_chat_response(r) if cut else r), GRADER, ("True", "False"))]
        if (judged := verdict(said)) is not None:
            record = record.replace(details={**record.details, "judge": judged, "judge_correct": judged == "True"})
    return record


def score(sample: BigToMSample, text: str | None, *, cut: bool = False, extraction: str = "official",
          keys: tuple[str, ...] = (), texts: tuple[str | None, ...] | None = None) -> Record:
    """Correct iff the letter read is the gold; nothing read is unparseable (not correct, in the denominator)."""
    letter, via, both = read(sample, text, cut=cut, extraction=extraction)
    outcome, gold = Outcome.judge(letter, sample.gold_label), sample.gold_label
    read_as = f"{letter}) via its {via}" if letter else "neither key a)/b) nor exactly one option's text"
    message = failure(f"BigToM {sample.id} ({sample.source})", outcome, sample.question,
                      f"gold: {gold}){sample.choice(gold).text}", f"answer: {(text or '')[:300]!r}; read: {read_as}")
    return Record.of(sample, outcome, parsed=letter, gold=gold, responses=texts if texts is not None else (text,),
                     request_keys=keys, details={"via": via, "both_keys": both}, message=message)
