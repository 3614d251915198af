import unittest

from textstats import mean, median, word_lengths


class WordLengthTests(unittest.TestCase):
    def test_punctuation_is_not_counted(self) -> None:
        self.assertEqual(word_lengths("Hello, world!"), [5, 5])


class MeanTests(unittest.TestCase):
    def test_mean(self) -> None:
        self.assertEqual(mean([2, 4, 6]), 4)

    def test_empty(self) -> None:
        with self.assertRaises(ValueError):
            mean([])


class MedianTests(unittest.TestCase):
    def test_odd_length(self) -> None:
        self.assertEqual(median([5, 1, 3]), 3)

    def test_even_length_averages_the_middle_pair(self) -> None:
        self.assertEqual(median([4, 1, 3, 2]), 2.5)

    def test_text(self) -> None:
        self.assertEqual(median(word_lengths("a bb ccc dddd")), 2.5)


if __name__ == "__main__":
    unittest.main()
