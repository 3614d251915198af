from textstats.stats import mean, median, word_lengths

__all__ = ["mean", "median", "word_lengths"]
