"""data_sources"""
