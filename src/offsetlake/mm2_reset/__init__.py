"""mm2_reset"""
