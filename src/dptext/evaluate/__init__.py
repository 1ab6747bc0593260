"""dptext.evaluate"""
