"""Summary statistics over the words of a text."""


def word_lengths(text: str) -> list[int]:
    return [len(word.strip(".,;:!?")) for word in text.split()]


def mean(values: list[int]) -> float:
    if not values:
        raise ValueError("mean of an empty list")
    return sum(values) / len(values)


def median(values: list[int]) -> float:
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]
