"""dptext.kde"""
